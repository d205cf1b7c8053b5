/* The session core's private header: the client structure and what the
 * core's files say to each other.  Bottom up (each calls only those before
 * it; tests/test_layers.sh checks it): errors.c, log.c, options.c,
 * states.c, calls.c, session.c, subs.c, tracks.c, listeners.c,
 * deletes.c, combine.c, client.c.  The recipes never include it: they use
 * session/core.h.  The engine's asynchronous acquires (engine/record.h) use the
 * client mutex and their own fields below.
 *
 * Locks, in the only order they may be taken:
 *   1. a lock object's own mutex (zkr_mutex_t.mu, ...), recipes only;
 *   2. c->mu, the client mutex;
 *   3. an acquire's own op->mu (engine/record.h: its news, requests in flight
 *      and its blocking caller's wake-up; a completion for a blocking
 *      acquire takes it alone);
 *   4. a handle's h->req_mu (combine.c, session.c: its registered requests
 *      and combiner queues), taken under c->mu and op->mu by the
 *      asynchronous sends;
 *   5. ZooKeeper's own locks (inside zoo_a* calls).
 * The program's log function may be called with c->mu held (see
 * zkr_log_fn: it must not call into the library).
 * Names: a function ending in _locked is entered and left with c->mu held
 * and never drops it; one ending in _relocking is entered and left with
 * it held but drops it inside (around a callback, a step, a rebuild or a
 * wait), so what it read before may have changed after.
 * No lock of ours is held across a synchronous ZooKeeper call or a user
 * callback.  Asynchronous zoo_a* calls may be made under c->mu: they only
 * queue the request and never run their completion before returning
 * (completions run on ZooKeeper's completion thread, which takes c->mu
 * or op->mu itself). */
#ifndef ZKR_CORE_PRIVATE_H
#define ZKR_CORE_PRIVATE_H

#include <stdatomic.h>

#include "session/core.h"

#define ZKR__RAW_MAX 64
#define ZKR__REPORT_MAX 64

/* A ZooKeeper handle with a use count (see internal.h). */
struct zkr__zh {
    zhandle_t *zh;          /* set before the handle is published */
    zkr_client_t *c;        /* constant */
    unsigned gen;           /* constant: the generation it was made for */
    int refs;               /* c->mu: users + 1 while it is the current handle */
    int64_t session_id;     /* c->mu: last session seen connected on it */
    int auth_rc;            /* c->mu: answer to the credentials; 1 while
                               none yet (or none sent: ZOK) */
    int log_slot;           /* constant: its log trampoline (log.c), -1 none */
    struct zkr__zh *next_retired; /* c->mu */
    pthread_mutex_t req_mu;
    pthread_cond_t req_cond; /* signalled when reqs becomes empty */
    zkr__req_t *reqs;       /* req_mu: fire-and-forget requests pending */
    zkr__queue_t dq, cq;    /* req_mu: deletes, creates waiting (combine.c) */
};

/* The connection-state machine's memory (pure: see zkr__sm_step). */
typedef struct zkr__sm {
    zkr_state_t state;  /* last state reported */
    int ever_connected;
    int connected;      /* the handle is connected now */
} zkr__sm_t;

/* What one raw ZooKeeper session event does (zkr__sm_step). */
typedef struct zkr__sm_effect {
    zkr_state_t report;  /* state to report, or ZKR_STATE_LATENT for none */
    int session_up;      /* record the handle's session id and timeout */
    int arm_lost_timer;  /* SUSPENDED began: LOST after a session timeout */
    int clear_lost_timer;
    int rebuild;         /* the session is gone: build a new one */
    int auth_failed;
} zkr__sm_effect_t;

/* The transition for raw C-client state `zs` (ZOO_*_STATE).  Updates *sm
 * and says what to do.  Pure: unit-tested without a server. */
zkr__sm_effect_t zkr__sm_step(zkr__sm_t *sm, int zs);
/* The LOST timer ran out (SUSPENDED for a whole session timeout). */
zkr__sm_effect_t zkr__sm_lost_timer(zkr__sm_t *sm);

typedef struct zkr__raw {
    unsigned gen;  /* generation of the handle that saw it */
    int state;
} zkr__raw_t;

typedef struct zkr__closer {
    pthread_t thread;
    zkr__zh_t *h;             /* the handle it closes */
    atomic_int done;          /* its thread has finished: join it */
    struct zkr__closer *next;
} zkr__closer_t;

typedef struct zkr__listener zkr__listener_t;
typedef struct zkr__sub zkr__sub_t;
typedef struct zkr__sub_event zkr__sub_event_t;
typedef struct zkr__pending_delete zkr__pending_delete_t;
typedef struct zkr__record zkr__record_t;

/* A queue of tracked nodes awaiting their self watch (tracks.c). */
typedef struct zkr__watch_queue {
    zkr__track_t *head, *tail;
} zkr__watch_queue_t;

struct zkr_client {
    /* ---- set by zkr_client_open, constant afterwards (no lock) ---- */
    char *hosts;              /* with the chroot appended */
    int session_timeout_req;
    int allow_read_only;
    char *auth_scheme;
    char *auth_data;
    int auth_data_len;
    struct ACL_vector acl;    /* of every node the recipes create */
    zkr_log_fn log_fn;        /* NULL: stderr */
    void *log_ctx;
    int log_level;            /* ZKR_LOG_* threshold of its lines */
    int zk_log_level;         /* threshold for the C client's lines; -1: log_level */
    pthread_t thread;         /* the client thread (client_main): the executor */
    atomic_int thread_started; /* from its start until it is joined */
    pthread_t cb_thread;      /* the callback thread (callback_main): runs
                                 every callback, the program's included */
    atomic_int cb_started;    /* from its start until it is joined */

    pthread_mutex_t mu;       /* the client mutex: guards every field below
                                 below */
    pthread_cond_t cond;      /* a state reached, users or handle refs
                                 drained, a callback finished */
    pthread_cond_t wake;      /* the client thread has work */
    int woken;                /* wake signalled since the client thread
                                 last began a round (it may have been
                                 busy, not waiting, when it came) */
    pthread_cond_t cb_wake;   /* the callback thread has work */
    int cb_woken;             /* the same, for the callback thread */

    /* ---- session.c ---- */
    zkr__zh_t *cur;           /* current handle (NULL once closed) */
    zkr__zh_t *retired;       /* replaced handles still referenced */
    zkr__closer_t *closers;   /* threads closing retired handles */
    unsigned gen;             /* generation of cur */
    unsigned gen_seq;         /* last generation handed out (every attempt
                                 gets its own, so a failed one's events are
                                 never taken for the next one's) */
    int64_t rebuild_at;       /* next rebuild attempt */
    int building;             /* a new handle is being made (c->mu dropped) */
    zkr__raw_t raw[ZKR__RAW_MAX]; /* session events not yet processed */
    int raw_n;
    int raw_overflow;
    zkr__sm_t sm;
    int have_session;
    int64_t session_id;
    char passwd[16];
    int session_timeout;      /* negotiated (ms) */
    int64_t lost_deadline;    /* SUSPENDED -> LOST at this time */
    int need_rebuild;
    int auth_failed;
    zkr_state_t reports[ZKR__REPORT_MAX]; /* states not yet told to the
                                 listeners (the callback thread) */
    int rep_head, rep_n;
    zkr_state_t applies[ZKR__REPORT_MAX]; /* states not yet applied to the
                                 holds and acquires (the client thread) */
    int app_head, app_n;

    /* ---- listeners.c ---- */
    zkr__listener_t *listeners;

    /* ---- deletes.c ---- */
    zkr__pending_delete_t *deletes;
    int deletes_abandoned;    /* given up since open (logged) */

    /* ---- subs.c ---- */
    zkr__sub_t *subs;
    zkr__sub_event_t *sev_head, *sev_tail;

    /* ---- tracks.c ---- */
    zkr__track_t *tracks;     /* oldest first */
    zkr__track_t *tracks_tail;
    zkr__watch_queue_t watch_q[2]; /* nodes awaiting their self watch:
                                 soon, late (tracks.c) */
    int64_t track_timer_at;   /* when the client thread looks at them next */
    unsigned track_epoch;     /* bumped by every state change applied */
    int tracks_dirty;         /* some track's state differs from what its
                                 listener was told */

    /* ---- the layer above (engine/): what the client thread and close
     * call (set once, never changed) ---- */
    const zkr__hooks_t *hooks;
    atomic_int hooks_set;     /* hooks is set (read without c->mu) */

    /* ---- engine/async*.c: asynchronous acquires (owned by the engine;
     * the core never touches them) ---- */
    zkr__record_t *records, *records_tail;   /* every one not yet freed, oldest first */
    int64_t records_due_at;           /* the client thread scans the records
                                         for their times no sooner */
    zkr__record_t *ready_head, *ready_tail; /* with something for the client thread */
    zkr__record_t *ended_head, *ended_tail; /* completions waiting to be dispatched */
    zkr__record_t *own_ended_head, *own_ended_tail; /* the library's own (on_client):
                                         delivered by the client thread */
    int dispatch_mode;            /* zkr_dispatch_mode_t */
    int event_fd;                  /* eventfd (zkr_client_fd), -1 until asked */
    int event_fd_raised;           /* event_fd is readable */
    uint64_t next_record_id;

    /* ---- callbacks (listeners, hold listeners, subscriptions) ---- */
    void *calling;            /* the object whose callback runs now */

    /* ---- lifetime ---- */
    int closing;              /* zkr_client_close has begun */
    int closed;               /* handles closed; memory kept for objects */
    int users;                /* threads inside a blocking call */
    int objects;              /* lock objects and leases made on it */
    uint64_t next_id;         /* ids of subscriptions, tracks, deletes */

};

/* Give the client thread work (c->mu held): it runs a round now, or when
 * it is done with the one it is in (never sleeps on a wake it missed). */
static inline void zkr__wake_locked(zkr_client_t *c)
{
    c->woken = 1;
    pthread_cond_signal(&c->wake);
}

/* Give the callback thread work (c->mu held): a state to tell, a hold
 * listener to call, a subscription event, a completion to deliver. */
static inline void zkr__wake_callbacks_locked(zkr_client_t *c)
{
    c->cb_woken = 1;
    pthread_cond_signal(&c->cb_wake);
}

/* Tests only (never set by the library): called by the rebuild between
 * making the new handle and making it current, to widen that window. */
extern void (*zkr__test_rebuild_pause)(void);

/* ---- session.c ---- */
int zkr__handle_new(zkr_client_t *c, unsigned gen, zkr__zh_t **out);
void zkr__handle_close(zkr__zh_t *h);
/* Process queued session events in order.  c->mu held. */
void zkr__session_process_locked(zkr_client_t *c);
/* The LOST timer and the rebuild, as due.  c->mu held, may be dropped.
 * Returns the next time something is due. */
int64_t zkr__session_tick_relocking(zkr_client_t *c);
/* The oldest state not yet applied to the holds and acquires (client
 * thread): 1 and *s, or 0 if none.  c->mu held. */
int zkr__session_next_state_locked(zkr_client_t *c, zkr_state_t *s);
/* Hand an applied state to the callback thread for the listeners.  c->mu
 * held. */
void zkr__session_tell_locked(zkr_client_t *c, zkr_state_t s);
/* Close retired handles nobody uses any more (each on a thread of its
 * own), and join the threads that have closed theirs.  c->mu held. */
void zkr__session_close_retired_relocking(zkr_client_t *c);
/* Join every closer thread (close, once the client thread is gone). */
void zkr__session_join_closers(zkr_client_t *c);
/* Record the answer to a request on h: "session expired/moved" on the
 * current handle declares the session LOST at once.  c->mu held. */
void zkr__answer_locked(zkr_client_t *c, const zkr__zh_t *h, int zrc);
int zkr__is_usable_state(zkr_state_t s);
int zkr__is_connected_state(zkr_state_t s);
/* 1 if the client is usable now (CONNECTED/RECONNECTED, connected).  c->mu held. */
int zkr__usable_locked(const zkr_client_t *c);

/* Tests only (never set by the library): called by the rebuild between
 * making the new handle and making it current, to widen that window. */
extern void (*zkr__test_rebuild_pause)(void);

/* ---- listeners.c ---- */
/* Tell the next queued state to the listeners (callback thread).  c->mu
 * held, dropped around each call.  Returns 1 if there was one. */
int zkr__listeners_deliver_next_relocking(zkr_client_t *c);
void zkr__listeners_free(zkr_client_t *c);

/* ---- subs.c ---- */
/* Run one queued subscription event.  c->mu held, dropped around the
 * call.  Returns 1 if there was one. */
int zkr__subs_run_next_relocking(zkr_client_t *c);
void zkr__subs_free(zkr_client_t *c);

/* ---- tracks.c ---- */
/* Bring every tracked hold in line with the state just delivered.  c->mu
 * held.  Verifications after RECONNECTED are sent asynchronously. */
void zkr__tracks_apply_locked(zkr_client_t *c, zkr_state_t s);
/* Tell hold listeners whatever they have not been told.  c->mu held,
 * dropped around each call.  Returns 1 if it called one. */
int zkr__tracks_notify_relocking(zkr_client_t *c);
void zkr__tracks_free(zkr_client_t *c);
/* Send the self watches that are due.  c->mu held (asynchronous calls
 * only).  Returns the next time one is due. */
int64_t zkr__tracks_watch_locked(zkr_client_t *c);

/* ---- deletes.c ---- */
/* Send the background deletes that are due.  c->mu held (only
 * asynchronous calls are made).  Returns the next time one is due. */
int64_t zkr__deletes_run_locked(zkr_client_t *c);
void zkr__deletes_free(zkr_client_t *c);

/* ---- log.c ---- */
/* A log trampoline for a new handle of c (NULL if none is free: the C
 * client's default then).  Give the slot back after zookeeper_close. */
log_callback_fn zkr__log_slot_take(zkr_client_t *c, int *slot);
void zkr__log_slot_give(int slot);

/* ---- options.c ---- */
/* 1 if `hosts` is a connection string zkr_client_open accepts. */
int zkr__hosts_valid(const char *hosts);
/* ZKR_OK or ZKR_EINVAL (see zkr_client_open). */
int zkr__options_validate(const zkr_client_options_t *opt);
/* The program's options (NULL: the defaults) into dst, a struct of this
 * version: ZKR_OK, or ZKR_EINVAL for a struct of a size this library
 * cannot read. */
int zkr__options_take(zkr_client_options_t *dst, const zkr_client_options_t *src);
/* The ACL the options ask for, copied; ZKR_OK or ZKR_ENOMEM. */
int zkr__acl_copy(struct ACL_vector *v, const zkr_client_options_t *opt);
void zkr__acl_free(struct ACL_vector *v);

/* ---- calls.c ---- */
/* Mark a callback as running (c->mu held); zkr__callback_end after it. */
void zkr__callback_begin_locked(zkr_client_t *c, void *obj);
void zkr__callback_end_locked(zkr_client_t *c);
/* Wait until `obj`'s callback is not running, unless the caller is that
 * callback itself (returns 1 then).  c->mu held. */
int zkr__callback_wait_relocking(zkr_client_t *c, const void *obj);

#endif

/* Inside the engine's acquire machine only (records.c, record_io.c, record_step.c,
 * acquire.c, async.c): one acquire's record.  Every acquire, blocking or
 * asynchronous, is one record run by one executor, the client thread: it
 * steps it, keeps its deadline, cancels it and ends it.  They differ only
 * in how the end is handed over: a blocking caller waits on the record's
 * own condition variable for it (`waited`); an asynchronous one's
 * completion is delivered (the program's dispatch, or the callback
 * thread).  The client's lists and most fields are guarded by c->mu; what
 * ZooKeeper's answers bring (the news, the count of requests in flight) by
 * the acquire's own op->mu, taken after c->mu (see session/core_private.h
 * for the whole lock order).
 *
 *  - ZooKeeper's completion thread runs our completions and watchers
 *    (record_io.c): they only record their news in the acquire (found by
 *    pointer for a completion: an acquire is freed only when none of its
 *    requests is in flight; by id for a watch, which may fire after it is
 *    gone) and put it on the client thread's ready list.
 *  - The client thread steps an acquire (record_step.c) with c->mu dropped,
 *    and ends those past their deadline (async.c): at the deadline at a
 *    look boundary, and ZKR__DEADLINE_GRACE_MS later whatever is in
 *    flight, so that a stalled link never holds a caller past its time
 *    limit.  Every delivered state, a release of the node it watches, and
 *    the deletion of its own node by someone else make it look again (the
 *    core's hooks).  A step sends only asynchronous requests, and only
 *    when none of the acquire's requests is in flight, so those in flight
 *    are always one batch on one handle (a create and its listing through
 *    the handle's combiner, or direct requests registered on the handle).
 *  - Completions (the program's functions) run on the thread calling
 *    zkr_client_dispatch, or on the callback thread in ZKR_DISPATCH_THREAD
 *    mode (the library's own always there), or on the thread closing the
 *    client; never under a lock of ours.
 * An acquire ends exactly once (zkr__record_finish_locked hands it to its
 * waiter or puts it on a done list); requests still in flight then are
 * answered into a finished acquire, whose step only cleans up (a node
 * created meanwhile is deleted, a lost reply's node by its prefix). */
#ifndef ZKR_ENGINE_AOP_H
#define ZKR_ENGINE_AOP_H

#include <stdatomic.h>

#include "session/core_private.h"
#include "engine/async.h"

#define ZKR__AOP_PARENT_RETRIES 5

#define ZKR__AOP_RECOVER_RETRIES 20


enum {
    ZKR__PH_START,   /* the current stage's create is to be sent (when connected) */
    ZKR__PH_CREATE,  /* the create and the listing behind it are in flight */
    ZKR__PH_RECOVER, /* the create's reply was lost: find our node by its prefix */
    ZKR__PH_QUEUE,   /* our queue node exists: list, decide, watch one node */
    ZKR__PH_LEASE    /* semaphore: locks/ held, our lease exists: count leases */
};

/* What completions and watches report; taken whole by the step. */
typedef struct zkr__news {
    int created, create_rc, create_local;
    char *path;
    int64_t czxid, owner;
    int listed, list_rc;
    zkr__strvec_t kids;
    int counted, count_rc;
    int32_t count;
    int watch_set, watch_set_rc;
    int look;            /* a watch fired, a state changed, a release nearby */
    int gone_first;      /* the watched node was first in line and is deleted */
    int parents, parents_rc;
    int existed, exists_rc; /* the recovery's exists */
    int64_t ex_czxid, ex_owner;
    /* the semaphore's lease sent ahead, behind the locks/ create */
    int ahead_created, ahead_create_rc;
    char *ahead_path;
    int64_t ahead_czxid, ahead_owner;
    int ahead_listed, ahead_list_rc;
    zkr__strvec_t ahead_kids;
} zkr__news_t;

struct zkr__record {
    uint64_t id;
    zkr_client_t *c;
    /* ---- constant ---- */
    int sem;                   /* the semaphore protocol (lease, semaphore mutex) */
    int release;               /* an asynchronous release, not an acquire */
    const zkr__driver_t *drv;
    char *dir;                 /* the queue's directory */
    char *leases_dir;          /* semaphore */
    char *count_path;          /* semaphore, shared count */
    char *value;               /* the queue node's data (NULL: none) */
    int value_len;
    int max;
    zkr__hold_listener_t hl;
    atomic_int *speculate;     /* c->mu: semaphore, fixed count: send the
                                  lease ahead while locks/ was last found
                                  free (the object's; NULL once forgotten) */
    zkr__async_done_t done;
    int64_t deadline;
    int64_t not_before;        /* the first create waits until then (a
                                  retry's pause; asynchronous only: read
                                  and cleared on the client thread) */
    /* ---- op->mu (taken after c->mu) ---- */
    pthread_mutex_t mu;
    pthread_cond_t cond;       /* its waiter: the end, or the client closing */
    int close_wake;            /* its waiter: the client is closing */
    int inflight;              /* requests whose completion has not run */
    int end_pending;           /* a waited acquire that failed: deletes of
                                  its nodes not yet answered (it ends when
                                  they are, or at its deadline's grace) */
    int create_inflight;       /* the create is one of them */
    zkr__req_t req;            /* registered on h while inflight > 0 */
    zkr__news_t nw;
    /* ---- written under c->mu and op->mu: read under either ---- */
    int waited;                /* a blocking caller waits for its end (until
                                  it takes it, or gives up at close) */
    int finished;
    int rc;
    /* ---- c->mu ---- */
    zkr__record_t *prev, *next;   /* c->records */
    zkr__record_t *ready_next;         /* c->ready_head (asynchronous only) */
    zkr__record_t *ended_next;         /* c->ended_head */
    int in_ready;              /* on c->ready_head (asynchronous) */
    const void *owner;
    const zkr__zh_t *h;        /* handle of the last requests: compared, never followed */
    int cancel;
    int expired;               /* past its deadline's grace: ends whatever
                                  is in flight */
    int ending;                /* failed with end_rc, its deletes awaited */
    int end_rc;
    int64_t end_by;            /* ... until then at the most */
    int taken, delivered;
    int detached;              /* its owner is gone: the delivery only
                                  undoes a grant (the library's own) */
    int delivering;            /* its deliver runs now, on delivering_thread */
    pthread_t delivering_thread;
    zkr__node_t granted;       /* the node an acquire that ended ZKR_OK grants
                                  (written by the stepping thread before
                                  `finished`) */
    char *watching;            /* the node our data watch is on */
    /* ---- the client thread only ---- */
    int phase;
    int in_lease;              /* semaphore: the lease stage */
    int attempts, parent_tries;
    int need_look;
    int need_parents;          /* the create found no directory: make it first */
    int spec;                  /* the lease went out behind locks/ */
    int decided;               /* the queue stage's first listing has decided */
    int watching_first;        /* next in line: the watched node is first */
    int recover_tries;
    char *rpath;               /* recovery: our node, found by its prefix */
    char *cpath;               /* the create's path (until it is answered) */
    zkr__zcreate_t z;          /* the create, through the handle's combiner */
    int64_t csession;          /* session the create went on */
    int64_t lsession;          /* session the listing went on */
    char uuid[ZKR__UUID_LEN + 1];
    zkr__node_t node;          /* the queue node */
    zkr__node_t lease;         /* semaphore: the lease node */
    char ahead_uuid[ZKR__UUID_LEN + 1]; /* the lease sent ahead */
    zkr__strvec_t ahead_kids;       /* its leases' listing, until locks/ decides */
    zkr__news_t parked;        /* answers kept until the rest of them come */
};

/* ---- records.c: the client's lists of acquires (c->mu held) ---- */
zkr__record_t *zkr__record_find_locked(zkr_client_t *c, uint64_t id);
/* Give op to the client thread to step (op on the ready list).  c->mu and
 * op->mu held. */
void zkr__record_ready_locked(zkr_client_t *c, zkr__record_t *op);
/* The same, taking op->mu (c->mu held); `look`: it looks again (a state,
 * a watch, a release or deletion nearby). */
void zkr__record_wake_locked(zkr_client_t *c, zkr__record_t *op, int look);
void zkr__record_raise_fd_locked(zkr_client_t *c);
void zkr__record_lower_fd_locked(zkr_client_t *c);
void zkr__news_clear(zkr__news_t *nw);
/* Answers of a batch that come one by one are parked in op->parked until
 * the last one (park), then decided on together (unpark: into nw). */
void zkr__news_park(zkr__record_t *op, zkr__news_t *nw);
void zkr__news_unpark(zkr__record_t *op, zkr__news_t *nw);
/* 1 if nw has something to step on (a look only if not finished). */
int zkr__news_any(const zkr__news_t *nw, int finished);
void zkr__record_free(zkr__record_t *op);
/* Free op if nothing will touch it any more. */
void zkr__record_maybe_free_locked(zkr_client_t *c, zkr__record_t *op);
/* The acquire ends with rc (ZKR_OK: op->granted is set). */
void zkr__record_finish_locked(zkr_client_t *c, zkr__record_t *op, int rc);
/* Run the first waiting completion of the kinds in `which` (the
 * library's own first) on the calling thread.  c->mu held, dropped around
 * the call.  Returns 1 if there was one. */
#define ZKR__DELIVER_OWN 1     /* the library's own (on_client) */
#define ZKR__DELIVER_PROGRAM 2 /* the program's */
int zkr__record_deliver_one_relocking(zkr_client_t *c, int which);

/* A zeroed record with its mutex and condition variable (NULL: ENOMEM). */
zkr__record_t *zkr__record_alloc(void);
/* A new acquire on t (not yet on any list): NULL on ZKR_ENOMEM. */
zkr__record_t *zkr__record_new(const zkr__async_target_t *t, int64_t deadline);
/* A record's time (deadline, pause, grace) comes at `at`: the client
 * thread looks at the records then (it scans them only when one's time
 * has come).  c->mu held. */
void zkr__record_due_locked(zkr_client_t *c, int64_t at);
/* Put op on c->records and give it its id; ZKR_ECLOSED if closing. */
int zkr__record_add_locked(zkr_client_t *c, zkr__record_t *op);

/* ---- record_io.c: requests and their answers ---- */
/* The current stage's create (a fresh protected name) with its listing
 * behind it: through the handle's combiner for a queue node, else direct
 * (the lease stage, or the lease sent ahead behind locks/).  No lock held. */
void zkr__record_send_create(zkr_client_t *c, zkr__record_t *op);
/* c->mu held (they take op->mu); asynchronous calls only. */
void zkr__record_send_look_locked(zkr_client_t *c, zkr__record_t *op);
void zkr__record_send_watch_locked(zkr_client_t *c, zkr__record_t *op, char *wpath, int first);
/* Recovery: list the stage's directory (plain), or look at our node. */
void zkr__record_send_recover_list_locked(zkr_client_t *c, zkr__record_t *op);
void zkr__record_send_recover_exists_locked(zkr_client_t *c, zkr__record_t *op);
const char *zkr__record_stage_dir(const zkr__record_t *op);

/* ---- async.c ---- */
/* Register the engine's hooks with the client (once). */
void zkr__async_use(zkr_client_t *c);

/* ---- record_step.c: the machine ---- */
/* Step op on its news (client thread, no lock held). */
void zkr__record_step(zkr_client_t *c, zkr__record_t *op);

#endif

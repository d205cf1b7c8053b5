/* Inside the engine's asynchronous acquires only (aops.c, aop_io.c,
 * aop_step.c, async.c): one acquire's record.  Every field shared with
 * another thread is guarded by c->mu (see core/core_private.h for the
 * lock order).
 *
 *  - ZooKeeper's completion thread runs our completions and watchers
 *    (aop_io.c): they only record their news in the acquire (found by
 *    pointer for a completion: an acquire is freed only when none of its
 *    requests is in flight; by id for a watch, which may fire after it is
 *    gone), put it on the ready list and wake the client thread.
 *  - The client thread steps the ready acquires (aop_step.c), one at a
 *    time, with c->mu dropped (only this thread ever steps one), ends those
 *    past their deadline, and sees every state delivered (async.c, through
 *    the core's hooks).  It sends only asynchronous requests (under c->mu,
 *    on the current handle: they only queue).
 *  - Completions (the program's functions) run on the thread calling
 *    zkr_client_dispatch, or on the client thread in ZKR_DISPATCH_THREAD
 *    mode, or on the thread closing the client; never under a lock of ours.
 * An acquire ends exactly once (zkr__aop_finish_locked puts it on the done
 * list); requests still in flight then are answered into a finished
 * acquire, whose step only cleans up (a node created meanwhile is
 * deleted). */
#ifndef ZKR_ENGINE_AOP_H
#define ZKR_ENGINE_AOP_H

#include "core/core_private.h"
#include "engine/async.h"

#define ZKR__AOP_PARENT_RETRIES 5
#define ZKR__AOP_CREATE_RETRIES 20

enum {
    ZKR__PH_START,  /* the current stage's create is to be sent (when connected) */
    ZKR__PH_CREATE, /* the create and the listing behind it are in flight */
    ZKR__PH_QUEUE,  /* our queue node exists: list, decide, watch one node */
    ZKR__PH_LEASE   /* semaphore: locks/ held, our lease exists: count leases */
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
    int wset, wset_rc;
    int look;            /* a watch fired, a state changed, a release nearby */
    int parents, parents_rc;
} zkr__news_t;

struct zkr__aop {
    uint64_t id;
    zkr_client_t *c;
    /* ---- constant ---- */
    int sem;                   /* the semaphore protocol (lease, semaphore mutex) */
    const zkr__driver_t *drv;
    char *dir;                 /* the queue's directory */
    char *leases_dir;          /* semaphore */
    char *count_path;          /* semaphore, shared count */
    int max;
    zkr_hold_fn hfn;
    void *hctx;
    zkr__async_done_t done;
    int64_t deadline;
    /* ---- c->mu ---- */
    zkr__aop_t *prev, *next;   /* c->aops */
    zkr__aop_t *rnext;         /* c->aready */
    zkr__aop_t *dnext;         /* c->adone */
    int in_ready;
    const void *owner;
    int inflight;              /* requests whose completion has not run */
    int create_inflight;       /* the create is one of them */
    zkr__req_t req;            /* registered on h while inflight > 0 */
    zkr__news_t nw;
    const zkr__zh_t *h;        /* handle of the last requests: compared, never followed */
    int cancel;
    int finished, taken, delivered;
    int rc;
    zkr__node_t granted;       /* the node an acquire that ended ZKR_OK grants */
    char *watching;            /* the node our data watch is on */
    /* ---- the client thread only ---- */
    int phase;
    int in_lease;              /* semaphore: the lease stage */
    int attempts, parent_tries;
    int need_look;
    int64_t csession;          /* session the create went on */
    int64_t lsession;          /* session the listing went on */
    char uuid[ZKR__UUID_LEN + 1];
    zkr__node_t node;          /* the queue node */
    zkr__node_t lease;         /* semaphore: the lease node */
    zkr__news_t parked;        /* answers kept until the rest of them come */
};

/* ---- aops.c: the client's lists of acquires (c->mu held) ---- */
zkr__aop_t *zkr__aop_find_locked(zkr_client_t *c, uint64_t id);
/* Put op on the ready list (the client thread steps it). */
void zkr__aop_ready_locked(zkr_client_t *c, zkr__aop_t *op);
void zkr__aop_raise_fd_locked(zkr_client_t *c);
void zkr__aop_lower_fd_locked(zkr_client_t *c);
void zkr__news_clear(zkr__news_t *nw);
void zkr__aop_free(zkr__aop_t *op);
/* Free op if nothing will touch it any more. */
void zkr__aop_maybe_free_locked(zkr_client_t *c, zkr__aop_t *op);
/* The acquire ends with rc (ZKR_OK: op->granted is set). */
void zkr__aop_finish_locked(zkr_client_t *c, zkr__aop_t *op, int rc);
/* Run the first waiting completion on the calling thread.  c->mu held,
 * dropped around the call.  Returns 1 if there was one. */
int zkr__aop_deliver_one_locked(zkr_client_t *c);

/* ---- aop_io.c: requests and their answers ---- */
/* c->mu held; asynchronous calls only. */
void zkr__aop_send_create_locked(zkr_client_t *c, zkr__aop_t *op, const char *path);
void zkr__aop_send_look_locked(zkr_client_t *c, zkr__aop_t *op);
void zkr__aop_send_parents_locked(zkr_client_t *c, zkr__aop_t *op, char *dir);
void zkr__aop_send_watch_locked(zkr_client_t *c, zkr__aop_t *op, char *wpath);
const char *zkr__aop_stage_dir(const zkr__aop_t *op);

/* ---- aop_step.c: the machine ---- */
/* Step op on its news (client thread, no lock held). */
void zkr__aop_step(zkr_client_t *c, zkr__aop_t *op);

#endif

/* The persistent node's insides (pnode.c: the public calls, the listener;
 * pnode_work.c: the thread that makes and keeps the node).  Never
 * installed. */
#ifndef ZKR_PNODE_PRIVATE_H
#define ZKR_PNODE_PRIVATE_H

#include <pthread.h>

#include "session/requests.h"
#include "zkr/pnode.h"

/* Each request of the pnode's thread waits at most this long: its stop
 * (zkr_pnode_free) and zkr_client_close wait for it no longer. */
#define ZKR__PNODE_REQUEST_MS 1000
/* A try that failed for the connection is made again after this long. */
#define ZKR__PNODE_RETRY_MS 200
/* Our own post to the subscription: tell the queued events. */
#define ZKR__PNODE_DELIVER (-102)

/* An event queued for the listener. */
typedef struct zkr__pevent {
    zkr_pnode_event_type_t type;
    char *node_path;
    int rc;
    struct zkr__pevent *next;
} zkr__pevent_t;

struct zkr_pnode {
    zkr_client_t *c;
    char *path;        /* as given */
    char *dir;         /* its parent */
    zkr_pnode_mode_t mode;
    void *sub;         /* watch events and our deliveries (callback thread) */
    int listening;     /* the state listener is registered */
    pthread_t thread;

    /* mu, cond: the state below; cond is signalled on every change */
    pthread_mutex_t mu;
    pthread_cond_t cond;
    int started, stop;
    uint64_t kicks;      /* watch events, states, new data: look again */
    char *data;          /* data_len bytes + NUL (never NULL once made) */
    size_t data_len;
    uint64_t data_gen;   /* bumped by each zkr_pnode_set_data */
    uint64_t written_gen; /* the data generation the node on the server has */
    char *node;          /* the node on the server, ours; NULL if none */
    int64_t czxid;       /* of `node` */
    int64_t node_owner;  /* `node`'s ephemeral owner (our session then); 0:
                            a persistent node */
    int failed_rc;       /* FAILED on failed_session: no try until a new one */
    int64_t failed_session;

    /* the thread's own (no lock) */
    char *fixed;         /* what every create makes: the path; in the
                            sequential modes, once the first create made
                            it, its name (the same uuid and number, not
                            sequential: Curator's rule); NULL before */
    char pending[ZKR__UUID_LEN + 1]; /* a protected create whose answer
                                        was lost: found by its prefix */
    int64_t pending_session;
    int plain_unknown;   /* a create of `fixed` whose answer was lost */
    int64_t plain_session;
    int64_t waiting_czxid; /* the other session's node told WAITING */

    /* emu, econd: the listener and its queue */
    pthread_mutex_t emu;
    pthread_cond_t econd;
    zkr_pnode_fn fn;
    void *ctx;
    int dead;            /* freed: nothing more is told */
    zkr__pevent_t *ehead, *etail;
    int in_call;
    pthread_t calling;
};

/* pnode.c: zkr_pnode_set_data in two halves, for a caller that waits in
 * slices (discovery_register.c).  Put: the new data kept (copied), the
 * thread kicked; *gen its generation.  ZKR_OK, ZKR_EINVAL, ZKR_ENOMEM.
 * Wait: until generation gen is on the server (or there is no node), the
 * client closed, or the deadline: ZKR_OK, ZKR_ECLOSED, ZKR_ETIMEDOUT. */
int zkr__pnode_put_data(zkr_pnode_t *n, const void *data, size_t data_len, uint64_t *gen);
int zkr__pnode_wait_written(zkr_pnode_t *n, uint64_t gen, int64_t deadline);

/* pnode_work.c */

/* The pnode's thread. */
void *zkr__pnode_main(void *arg);
/* Queue an event for the listener (node_path copied).  Logged if it
 * cannot be. */
void zkr__pnode_tell(zkr_pnode_t *n, zkr_pnode_event_type_t type, const char *node_path, int rc);
/* After the thread stopped (zkr_pnode_free): delete the node it made
 * (only that one: the same czxid) until the deadline, the rest in the
 * background. */
void zkr__pnode_delete_own(zkr_pnode_t *n, int64_t deadline);

#endif

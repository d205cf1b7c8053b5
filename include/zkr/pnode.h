/* zkr_pnode_t: a node that stays (Curator's PersistentNode): a node with
 * the program's data, created when started and made again whenever it
 * goes (the session lost, deleted by someone else), its data written
 * again when it changes, deleted when freed.  Group membership and
 * service registration are built on it.
 *
 *   zkr_pnode_t *n;
 *   zkr_pnode_new(&n, c, "/services/web/instance-1", "up", 2, NULL);
 *   zkr_pnode_start(n);
 *   zkr_pnode_wait_created(n, 5000);
 *   ...
 *   zkr_pnode_free(n);   (deletes it)
 *
 * Rules (beyond <zkr/common.h>'s):
 *  - Wire format: the node at `path` (with Curator's protected name and a
 *    sequence number in the sequential modes: parent/_c_<uuid>-<name><seq>),
 *    the program's data as is, missing parents made as containers, the
 *    client's ACL.
 *  - A node already at the path is adopted (its data overwritten) only if
 *    it is ours: an ephemeral node whose ephemeralOwner is the current
 *    session, or a persistent node (which has no owner).  An ephemeral
 *    node of another session (another process, or our own session that
 *    ended but is not yet expired on the server) is never deleted nor
 *    overwritten: the pnode waits (ZKR_PNODE_WAITING) until it goes, then
 *    creates its own.
 *  - Deletes (zkr_pnode_free, a protected node found again) touch only the
 *    node this pnode created: the same czxid.
 *  - Its work runs on a thread of its own; the listener runs on the
 *    client's callback thread. */
#ifndef ZKR_PNODE_H
#define ZKR_PNODE_H

#include "zkr/client.h"
#include "zkr/common.h"
#include "zkr/errors.h"
#include "zkr/op.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zkr_pnode zkr_pnode_t;

typedef enum zkr_pnode_mode {
    ZKR_PNODE_EPHEMERAL = 0,            /* default: goes with the session, made again */
    ZKR_PNODE_PERSISTENT = 1,           /* stays after the session; deleted by free */
    ZKR_PNODE_EPHEMERAL_SEQUENTIAL = 2, /* a protected name with a sequence number */
    ZKR_PNODE_PERSISTENT_SEQUENTIAL = 3
} zkr_pnode_mode_t;

typedef enum zkr_pnode_event_type {
    ZKR_PNODE_CREATED = 1, /* node_path is on the server, ours, with our data
                              (made, or adopted); again after each DELETED */
    ZKR_PNODE_DELETED = 2, /* node_path is gone (session lost, deleted by
                              another): being made again */
    ZKR_PNODE_WAITING = 3, /* another session's node is at the path: waiting
                              for it to go (node_path: that node) */
    ZKR_PNODE_FAILED = 4   /* the server refuses the create for good (rc:
                              ZKR_ENOAUTH, ZKR_EINVAL, ...): tried again
                              only after a new session */
} zkr_pnode_event_type_t;

typedef struct zkr_pnode_event {
    zkr_pnode_event_type_t type;
    const char *node_path; /* valid during the call */
    int rc;                /* FAILED: why; else ZKR_OK */
} zkr_pnode_event_t;

/* Told each event on the client's callback thread, in order, its pnode
 * first.  It may call the library, but not zkr_pnode_free on its own
 * pnode. */
typedef void (*zkr_pnode_fn)(zkr_pnode_t *node, const zkr_pnode_event_t *event, void *ctx);

typedef struct zkr_pnode_options {
    size_t size;           /* set by zkr_pnode_options_init */
    zkr_pnode_mode_t mode; /* default ZKR_PNODE_EPHEMERAL */
} zkr_pnode_options_t;

/* Fill opt with the defaults (a macro passing the program's struct size).
 * NULL is ignored. */
ZKR_EXTERN void zkr_pnode_options_init_size(zkr_pnode_options_t *opt, size_t size);
#define zkr_pnode_options_init(opt) zkr_pnode_options_init_size((opt), sizeof(zkr_pnode_options_t))

/* A pnode at `path` with data_len bytes of `data` (copied; NULL with 0:
 * no data); opt NULL: the defaults.  Nothing is sent until
 * zkr_pnode_start.  Returns ZKR_OK, ZKR_EINVAL (out, c NULL; a path
 * ZooKeeper would refuse, "/" or under /zookeeper; data_len over
 * ZKR_DATA_MAX or data NULL with data_len > 0; an unknown mode; opt->size
 * too small or too large), ZKR_ECLOSED, ZKR_ENOMEM, ZKR_ESYSTEM. */
ZKR_EXTERN int zkr_pnode_new(zkr_pnode_t **out, zkr_client_t *c, const char *path, const void *data, size_t data_len,
                             const zkr_pnode_options_t *opt);

/* The listener (NULL removes it), any time until freed: told the events
 * after the call.  Returns ZKR_OK, ZKR_EINVAL (node NULL). */
ZKR_EXTERN int zkr_pnode_set_listener(zkr_pnode_t *node, zkr_pnode_fn fn, void *ctx);
#ifdef ZKR__CHECKS
#define zkr_pnode_set_listener(node, fn, ctx)                                                                  \
    ZKR__CHECKED(fn, zkr_pnode_fn,                                                                            \
                 "a pnode listener is void fn(zkr_pnode_t *node, const zkr_pnode_event_t *event, void *ctx)", \
                 zkr_pnode_set_listener(node, fn, ctx))
#endif

/* Start: create the node, and keep it.  Returns ZKR_OK, ZKR_EINVAL,
 * ZKR_ESTATE (started before), ZKR_ECLOSED, ZKR_ESYSTEM. */
ZKR_EXTERN int zkr_pnode_start(zkr_pnode_t *node);

/* Wait until the node is on the server, ours (at once if it is now).
 * Returns ZKR_OK, ZKR_EINVAL, ZKR_ESTATE (not started), ZKR_ETIMEDOUT,
 * ZKR_ECLOSED (the client closed), or the refusal of a FAILED create
 * (ZKR_ENOAUTH, ...). */
ZKR_EXTERN int zkr_pnode_wait_created(zkr_pnode_t *node, int64_t timeout_ms);

/* 1 while the node is known to be on the server and ours, else 0 (also
 * for NULL). */
ZKR_EXTERN int zkr_pnode_is_created(zkr_pnode_t *node);

/* New data (copied): kept for every later create, and written to the node
 * if it exists (version -1: the node is ours).  Waits for the write until
 * the timeout.  Returns ZKR_OK (written, or not created yet: it will be
 * made with it), ZKR_EINVAL (as zkr_pnode_new), ZKR_ETIMEDOUT (not
 * confirmed in time: written once the link allows), ZKR_ECLOSED,
 * ZKR_ENOMEM. */
ZKR_EXTERN int zkr_pnode_set_data(zkr_pnode_t *node, const void *data, size_t data_len, int64_t timeout_ms);

/* A copy of the data it keeps: *data (data_len bytes and a NUL byte; NULL
 * if none) is the caller's (zkr_free).  Returns ZKR_OK, ZKR_EINVAL,
 * ZKR_ENOMEM. */
ZKR_EXTERN int zkr_pnode_data(zkr_pnode_t *node, char **data, size_t *data_len);

/* The path of the node now on the server (sequential modes: with its
 * name and number): a copy, *path the caller's (zkr_free).  Returns
 * ZKR_OK, ZKR_EINVAL, ZKR_ENONODE (not created now; *path NULL),
 * ZKR_ENOMEM. */
ZKR_EXTERN int zkr_pnode_node_path(zkr_pnode_t *node, char **path);

/* Stop and delete the node (only the one it created), waiting for the
 * delete at most ZKR_RELEASE_WAIT_MS; if the link is down the delete is
 * finished in the background while the session lives (an ephemeral node
 * goes with its session anyway).  After it returns the listener is not
 * running and will not run again.  From the pnode's own listener: not
 * allowed, logged, nothing done.  NULL is a no-op. */
ZKR_EXTERN void zkr_pnode_free(zkr_pnode_t *node);

/* "CREATED", "DELETED", "WAITING", "FAILED"; "UNKNOWN" otherwise. */
ZKR_EXTERN const char *zkr_pnode_event_name(zkr_pnode_event_type_t type);

#ifdef __cplusplus
}
#endif
#endif

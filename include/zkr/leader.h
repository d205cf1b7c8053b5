/* Leader election, wire-compatible with Apache Curator 5.x's LeaderLatch
 * and LeaderSelector (C and Java processes can stand in one election), and
 * what Curator's users still ask for: observing the leader, proclaiming a
 * value, a fencing token with leadership, guarded writes (zkr/guard.h).
 *
 * Three ways to take part, and one to watch:
 *
 *   zkr_latch_t     Curator's LeaderLatch.  Join with zkr_latch_start; the
 *                   latch leads while its node is first; it stays in the
 *                   election (rejoining after a lost session, an outside
 *                   deletion or a vanished path) until zkr_latch_close.
 *                   No thread of its own: the client's callback thread runs it.
 *                   Nodes: "<path>/_c_<uuid>-latch-<seq>",
 *                   EPHEMERAL_SEQUENTIAL, data = the participant id (UTF-8).
 *   zkr_selector_t  Curator's LeaderSelector.  A mutex on the path
 *                   ("<path>/_c_<uuid>-lock-<seq>", data = the id, or the
 *                   host's address when the id is NULL or ""); while it is
 *                   held, a callback of the program runs on the selector's
 *                   own thread: leadership lasts until it returns.
 *   zkr_leader_acquire_async
 *                   one term of leadership as an asynchronous hold (the
 *                   lock API's shape: completion on dispatch, cancel with
 *                   zkr_async_cancel, end with zkr_hold_release).  Its node
 *                   is a latch node: Curator's LeaderLatch sees a
 *                   participant.
 *   zkr_observer_t  told each change of leader of a latch or selector path
 *                   (who, their value, their fencing token), participant or
 *                   not: no polling.
 *
 * Leadership and the connection (Curator's rules): when the connection
 * goes down (SUSPENDED: our hold IN_DOUBT) a latch stops being leader at
 * once (ZKR_LEADER_POLICY_STANDARD, Curator's default error policy) or
 * only when the session is LOST (ZKR_LEADER_POLICY_SESSION, Curator's
 * SessionConnectionStateErrorPolicy).  After RECONNECTED it looks again:
 * its node still first and on its session: leader again (same token);
 * its node gone (session expired, deleted by someone, path removed): it
 * rejoins with a new node.  A selector's callback is told to stop in both
 * cases (and on interrupt and close).
 *
 * Fencing token: the czxid of the leader's node.  It is given with every
 * "you are leader" and to observers; a later leader of the same path
 * always has a larger one, so a resource that keeps the largest token it
 * has seen can refuse a deposed leader.
 *
 * Ids and values are NUL-terminated UTF-8 strings of at most
 * ZKR_LEADER_ID_MAX bytes (ZKR_EINVAL otherwise), stored as the node's
 * data without the NUL.  What other processes stored is read as bytes and
 * handed out as it is (NUL-terminated, with its length): it is never
 * trusted to be UTF-8.
 *
 *   zkr_latch_t *l;
 *   zkr_latch_new(&l, client, "/app/leader", "worker-7");
 *   zkr_latch_start(l);
 *   if (zkr_latch_await(l, 10000) == ZKR_OK) {
 *       int64_t token;
 *       zkr_latch_fencing_token(l, &token);
 *       ... lead, passing token to the resources ...
 *   }
 *   zkr_latch_close(l, ZKR_LATCH_CLOSE_NOTIFY_LEADER);
 *   zkr_latch_free(l);
 */
#ifndef ZKR_LEADER_H
#define ZKR_LEADER_H

#include "zkr/async.h"
#include "zkr/client.h"
#include "zkr/common.h"
#include "zkr/errors.h"
#include "zkr/guard.h"
#include "zkr/hold.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The longest id or proclaimed value, in bytes (without the NUL). */
#define ZKR_LEADER_ID_MAX (1024 * 1024 - 16 * 1024)

/* Which recipe's nodes an election path holds. */
typedef enum zkr_election_kind {
    ZKR_ELECTION_LATCH = 0,   /* "latch-" nodes: zkr_latch_t, LeaderLatch,
                                 zkr_leader_acquire_async */
    ZKR_ELECTION_SELECTOR = 1 /* "lock-" nodes: zkr_selector_t, LeaderSelector */
} zkr_election_kind_t;

/* One participant as read from ZooKeeper. */
typedef struct zkr_participant {
    char *node_path; /* full path of its node */
    char *id;        /* its node's data (id or proclaimed value), NUL-terminated;
                        bytes as stored, not checked */
    size_t id_len;   /* bytes in id, without the NUL */
    int64_t token;   /* its node's czxid (the fencing token when it leads) */
    int64_t session; /* its node's ephemeralOwner */
    int is_leader;   /* 1 for the first in the election's order */
} zkr_participant_t;

/* Everyone in the election at `path`, leader first, as Curator reads them:
 * list the children, sort them in Curator's order, one getData each; a node
 * gone meanwhile is skipped.  Free with zkr_participants_free.  A path that
 * does not exist gives no participants (ZKR_OK, *count 0).  Returns ZKR_OK,
 * ZKR_EINVAL (NULL argument, bad path, unknown kind), ZKR_ECONNLOSS,
 * ZKR_ESESSIONLOST, ZKR_ECLOSED, ZKR_ENOAUTH, ZKR_ENOMEM, ZKR_EZOOKEEPER. */
ZKR_EXTERN int zkr_election_participants(zkr_client_t *c, const char *path, zkr_election_kind_t kind,
                                         zkr_participant_t **participants, size_t *count);

/* The current leader only (*leader: one participant, free with
 * zkr_participants_free(*leader, 1)).  Returns the codes of
 * zkr_election_participants, and ZKR_ENONODE when nobody takes part. */
ZKR_EXTERN int zkr_election_leader(zkr_client_t *c, const char *path, zkr_election_kind_t kind,
                                   zkr_participant_t **leader);

/* Free participants (their strings, then the array).  NULL is a no-op. */
ZKR_EXTERN void zkr_participants_free(zkr_participant_t *participants, size_t count);

/* When a connection problem ends leadership (see above). */
typedef enum zkr_leader_policy {
    ZKR_LEADER_POLICY_STANDARD = 0, /* SUSPENDED or LOST (Curator's default) */
    ZKR_LEADER_POLICY_SESSION = 1   /* LOST only */
} zkr_leader_policy_t;

typedef struct zkr_latch zkr_latch_t;
typedef struct zkr_selector zkr_selector_t;

/* Leadership listeners (zkr_latch_set_listener, zkr_selector_set_listener):
 * told each change of leadership of their latch or selector, on the
 * client's callback thread, in order, never twice the same: is_leader 1
 * with the term's fencing token, or 0 (token 0).  May block (it delays
 * only the callbacks after it) and may call the library (not
 * zkr_client_close, nor zkr_latch_free / zkr_selector_free on the object
 * it is told about). */
typedef void (*zkr_latch_fn)(zkr_latch_t *l, int is_leader, int64_t token, void *ctx);
typedef void (*zkr_selector_fn)(zkr_selector_t *s, int is_leader, int64_t token, void *ctx);

/* ---- LeaderLatch ---------------------------------------------------------- */


/* A latch on `path` for participant `participant_id` (NULL means "", Curator's
 * default id: zero bytes of data).  Nothing is sent.  Returns ZKR_OK,
 * ZKR_EINVAL (out, c NULL; a path ZooKeeper would refuse; id not valid
 * UTF-8 or over ZKR_LEADER_ID_MAX bytes), ZKR_ECLOSED (the client is
 * closing), ZKR_ENOMEM, ZKR_ESYSTEM. */
ZKR_EXTERN int zkr_latch_new(zkr_latch_t **out, zkr_client_t *c, const char *path, const char *participant_id);

/* Before zkr_latch_start: the policy (default STANDARD).  Returns ZKR_OK,
 * ZKR_EINVAL (l NULL, unknown policy), ZKR_ESTATE (already started). */
ZKR_EXTERN int zkr_latch_set_policy(zkr_latch_t *l, zkr_leader_policy_t policy);
/* The listener (default none; NULL fn removes it), as every listener of
 * the library: settable any time, told the changes that come after the
 * call (nothing is told again: zkr_latch_has_leadership says where the
 * latch stands).  Returns ZKR_OK, ZKR_EINVAL (l NULL), ZKR_ESTATE
 * (closed). */
ZKR_EXTERN int zkr_latch_set_listener(zkr_latch_t *l, zkr_latch_fn fn, void *ctx);
#ifdef ZKR__CHECKS
#define zkr_latch_set_listener(l, fn, ctx) \
    ZKR__CHECKED(fn, zkr_latch_fn, "a latch listener is void fn(zkr_latch_t *l, int is_leader, int64_t token, void *ctx)", zkr_latch_set_listener(l, fn, ctx))
#endif

/* Join the election (once): returns at once; the client's callback thread creates
 * the node and takes part (a latch costs no thread of its own).  Returns
 * ZKR_OK, ZKR_EINVAL (l NULL), ZKR_ESTATE (started before, or closed),
 * ZKR_ECLOSED (the client is closing), ZKR_ENOMEM. */
ZKR_EXTERN int zkr_latch_start(zkr_latch_t *l);

/* Wait until this latch leads, at most timeout_ms (< 0 forever, 0 a look).
 * Returns ZKR_OK (leader now), ZKR_ETIMEDOUT, ZKR_EINVAL (l NULL),
 * ZKR_ESTATE (not started, or closed before or during the wait),
 * ZKR_ECLOSED (the client is closing). */
ZKR_EXTERN int zkr_latch_await(zkr_latch_t *l, int64_t timeout_ms);

/* 1 if the latch leads now, else 0 (also for NULL). */
ZKR_EXTERN int zkr_latch_has_leadership(zkr_latch_t *l);

/* The current term's fencing token.  Returns ZKR_OK, ZKR_EINVAL (NULL
 * argument), ZKR_ENOTLEADER (not leader now). */
ZKR_EXTERN int zkr_latch_fencing_token(zkr_latch_t *l, int64_t *token);

/* The full path of the current term's node: *path is the caller's
 * (zkr_free).  Returns ZKR_OK, ZKR_EINVAL (NULL argument), ZKR_ENOTLEADER
 * (not leader now; *path NULL), ZKR_ENOMEM. */
ZKR_EXTERN int zkr_latch_node_path(zkr_latch_t *l, char **path);

/* The latch's id as given (never NULL; "" for NULL l). */
ZKR_EXTERN const char *zkr_latch_id(zkr_latch_t *l);

/* Set the value stored in the leader's node (its id for Curator) without a
 * new election; observers are told.  Only while leading (and the node's
 * session is the client's current one: a guarded set).
 * With Curator participants: Curator's LeaderLatch (5.x) acts only on its
 * predecessor's deletion, so the data change uses up the watch of a
 * Curator LeaderLatch queued right behind the leader, which then notices
 * the leader's departure only at its next reconnection.  Proclaim in
 * elections whose participants are zkrecipes processes (or Curator
 * LeaderSelectors, which look again on any event).  Returns ZKR_OK,
 * ZKR_EINVAL (NULL, not valid UTF-8, over ZKR_LEADER_ID_MAX),
 * ZKR_ENOTLEADER (not leader: nothing written), ZKR_ECONNLOSS (outcome
 * unknown), ZKR_ESESSIONLOST, ZKR_ECLOSED, ZKR_ENOAUTH (the node's ACL
 * was changed to refuse our write), ZKR_ENOMEM, ZKR_EZOOKEEPER. */
ZKR_EXTERN int zkr_latch_proclaim(zkr_latch_t *l, const char *value);

/* zkr_guarded_write guarded by this latch's leadership: ZKR_ENOTLEADER
 * when not leading now (nothing sent); else its codes (ZKR_EGUARD: the
 * leader's node is gone, nothing written). */
ZKR_EXTERN int zkr_latch_guarded_write(zkr_latch_t *l, zkr_op_t *ops, size_t n);

/* How zkr_latch_close treats a listener while the latch leads. */
typedef enum zkr_latch_close_mode {
    ZKR_LATCH_CLOSE_SILENT = 0,       /* the listener is not told */
    ZKR_LATCH_CLOSE_NOTIFY_LEADER = 1 /* told "not leader" first */
} zkr_latch_close_mode_t;

/* Leave the election (the only way to give leadership up): not leader at
 * once, its node is deleted (waiting at most ZKR_RELEASE_WAIT_MS; then in
 * the background), a join in progress is cancelled, zkr_latch_await
 * callers return ZKR_ESTATE.  After it returns the listener is not running
 * and will not run.  On the client's callback thread (from a listener: its own, or
 * another latch's, an observer, a state listener) it does not wait for
 * that thread: with NOTIFY_LEADER a "not leader" still to be told is told
 * within the call (from its own listener: a nested call; a term begun and
 * ended meanwhile is not told).  Returns ZKR_OK, ZKR_EINVAL (l NULL,
 * unknown mode), ZKR_ESTATE (not started, or closed already). */
ZKR_EXTERN int zkr_latch_close(zkr_latch_t *l, zkr_latch_close_mode_t mode);

/* Free the latch (closing it silently if it was started and not closed).
 * NULL is a no-op.  No thread may be inside a call on `l`.  Not from the
 * latch's own listener: the latch is then left as it is (closed, not
 * freed) and an error is logged.  From any other callback it works. */
ZKR_EXTERN void zkr_latch_free(zkr_latch_t *l);

/* ---- LeaderSelector ------------------------------------------------------- */


/* The program's leadership: runs on the selector's thread while the
 * selector holds the mutex; leadership ends when it returns (the mutex is
 * released then).  It should return soon after zkr_selector_should_stop
 * becomes 1 (the hold went IN_DOUBT or LOST, zkr_selector_interrupt or
 * close was called): poll that, or block in zkr_selector_wait_stop.  C has
 * no thread interruption: a callback that ignores it keeps running, but
 * it is no longer safe to act as leader. */
typedef void (*zkr_take_leadership_fn)(zkr_selector_t *s, int64_t token, void *ctx);

/* A selector on `path` for participant `participant_id` (NULL or "": the node's data
 * is the host's address, the first non-loopback IPv4 address of the host
 * as text, as Curator writes its local address; "127.0.0.1" if none).
 * fn is required.  Nothing is sent.  Returns ZKR_OK, ZKR_EINVAL (NULL out,
 * c or fn; bad path; id not valid UTF-8 or too large), ZKR_ECLOSED,
 * ZKR_ENOMEM, ZKR_ESYSTEM. */
ZKR_EXTERN int zkr_selector_new(zkr_selector_t **out, zkr_client_t *c, const char *path, const char *participant_id,
                                zkr_take_leadership_fn fn, void *ctx);

/* Queue again after each term (Curator's autoRequeue); default off: one
 * term per zkr_selector_start / zkr_selector_requeue.  Any time.  Returns
 * ZKR_OK, ZKR_EINVAL. */
ZKR_EXTERN int zkr_selector_set_auto_requeue(zkr_selector_t *s, int on);

/* A listener told "leader" (with the token) before the callback runs and
 * "not leader" once it has returned, on the client's callback thread; set
 * any time, told the changes after the call (as zkr_latch_set_listener).
 * Returns ZKR_OK, ZKR_EINVAL, ZKR_ESTATE (closed). */
ZKR_EXTERN int zkr_selector_set_listener(zkr_selector_t *s, zkr_selector_fn fn, void *ctx);
#ifdef ZKR__CHECKS
#define zkr_selector_set_listener(s, fn, ctx) \
    ZKR__CHECKED(fn, zkr_selector_fn, "a selector listener is void fn(zkr_selector_t *s, int is_leader, int64_t token, void *ctx)", zkr_selector_set_listener(s, fn, ctx))
#endif

/* Queue for leadership (once; the selector's thread starts).  Returns
 * ZKR_OK, ZKR_EINVAL, ZKR_ESTATE (started before, or closed), ZKR_ECLOSED,
 * ZKR_ENOMEM, ZKR_ESYSTEM. */
ZKR_EXTERN int zkr_selector_start(zkr_selector_t *s);

/* Queue once more if neither queued nor leading (Curator's requeue).
 * Returns ZKR_OK (queued, or already queued or leading), ZKR_EINVAL,
 * ZKR_ESTATE (not started, or closed). */
ZKR_EXTERN int zkr_selector_requeue(zkr_selector_t *s);

/* 1 while the callback should stop (see zkr_take_leadership_fn), and when
 * not leading; 0 while it may lead (NULL: 1). */
ZKR_EXTERN int zkr_selector_should_stop(zkr_selector_t *s);

/* Block until the callback should stop, at most timeout_ms (< 0 forever).
 * Returns ZKR_OK (stop now), ZKR_ETIMEDOUT (lead on), ZKR_EINVAL. */
ZKR_EXTERN int zkr_selector_wait_stop(zkr_selector_t *s, int64_t timeout_ms);

/* Tell the running callback to stop (Curator's interruptLeadership); the
 * selector requeues afterwards only with auto requeue.  Returns ZKR_OK,
 * ZKR_EINVAL, ZKR_ENOTLEADER (no callback running: nothing changes). */
ZKR_EXTERN int zkr_selector_interrupt(zkr_selector_t *s);

/* 1 while the callback runs and its hold is SAFE, else 0 (NULL: 0). */
ZKR_EXTERN int zkr_selector_has_leadership(zkr_selector_t *s);

/* The running term's token.  ZKR_OK, ZKR_EINVAL, ZKR_ENOTLEADER. */
ZKR_EXTERN int zkr_selector_fencing_token(zkr_selector_t *s, int64_t *token);

/* The running term's node path (as zkr_latch_node_path).  ZKR_OK,
 * ZKR_EINVAL, ZKR_ENOTLEADER, ZKR_ENOMEM. */
ZKR_EXTERN int zkr_selector_node_path(zkr_selector_t *s, char **path);

/* As zkr_latch_proclaim and zkr_latch_guarded_write, for the running term
 * (ZKR_ENOTLEADER when no callback runs). */
ZKR_EXTERN int zkr_selector_proclaim(zkr_selector_t *s, const char *value);
ZKR_EXTERN int zkr_selector_guarded_write(zkr_selector_t *s, zkr_op_t *ops, size_t n);

/* Leave: tell the callback to stop, wait for it to return, delete our
 * node, end the thread (on the client's callback thread: the listener as
 * zkr_latch_close tells it).  Returns ZKR_OK, ZKR_EINVAL, ZKR_ESTATE (not
 * started, or closed already), ZKR_EDEADLK (called on the selector's own
 * thread, from the callback, or from its listener: nothing done; return
 * from it instead). */
ZKR_EXTERN int zkr_selector_close(zkr_selector_t *s);

/* Free (closing first if needed).  NULL is a no-op.  Not from the
 * selector's own callback or listener (where zkr_selector_close says
 * ZKR_EDEADLK): the selector is then left as it is, not freed, and an
 * error is logged. */
ZKR_EXTERN void zkr_selector_free(zkr_selector_t *s);

/* ---- one term, asynchronously -------------------------------------------- */

/* Join the latch election at `path` with `participant_id` (as zkr_latch_new) and be
 * told, as a completion (see zkr/async.h: on dispatch, exactly once), when
 * this participant leads: zkr_acquire_fn(acquire_id, rc, hold, ctx) with rc ZKR_OK and
 * a hold of kind "leader" (token: zkr_hold_fencing_token; state:
 * zkr_hold_state; guarded writes: zkr_hold_guarded_write; proclaim:
 * zkr_hold_proclaim), or the codes of zkr_lock_acquire_async's completion.
 * The term ends with zkr_hold_release / zkr_hold_release_async, or with
 * the session (the hold becomes LOST: start again to rejoin).  Cancel with
 * zkr_async_cancel(c, *acquire_id).  Returns ZKR_OK (fn will run), ZKR_EINVAL
 * (NULL c or fn, bad path, bad id), ZKR_ECLOSED, ZKR_ENOMEM. */
ZKR_EXTERN int zkr_leader_acquire_async(zkr_client_t *c, const char *path, const char *participant_id,
                                        int64_t timeout_ms, zkr_acquire_fn fn, void *ctx, uint64_t *acquire_id);
#ifdef ZKR__CHECKS
#define zkr_leader_acquire_async(c, path, participant_id, timeout_ms, fn, ctx, acquire_id) \
    ZKR__CHECKED(fn, zkr_acquire_fn, "the completion is void fn(uint64_t acquire_id, int rc, zkr_hold_t *hold, void *ctx)", zkr_leader_acquire_async(c, path, participant_id, timeout_ms, fn, ctx, acquire_id))
#endif


/* ---- observing ------------------------------------------------------------ */

typedef struct zkr_observer zkr_observer_t;

/* Told each change of leader on the client's callback thread: o is the
 * observer (the first call may come before zkr_observer_new has
 * returned), leader NULL when nobody leads (or the path is gone), else
 * the leader (valid during the call only).  A change is a new leader node
 * or a new value proclaimed in it.  The first call tells the leader found
 * at the start. */
typedef void (*zkr_observe_fn)(zkr_observer_t *o, const zkr_participant_t *leader, void *ctx);

/* Observe the election at `path`: one data watch on the leader's node (no
 * watch on the others, so no herd), a children watch on the path only
 * while nobody takes part, looking again after every reconnection.  The
 * observer's thread reads; fn runs on the client's callback thread.  Returns
 * ZKR_OK, ZKR_EINVAL (NULL out, c or fn, bad path, unknown kind),
 * ZKR_ECLOSED, ZKR_ENOMEM, ZKR_ESYSTEM. */
ZKR_EXTERN int zkr_observer_new(zkr_observer_t **out, zkr_client_t *c, const char *path, zkr_election_kind_t kind,
                                zkr_observe_fn fn, void *ctx);
#ifdef ZKR__CHECKS
#define zkr_observer_new(out, c, path, kind, fn, ctx) \
    ZKR__CHECKED(fn, zkr_observe_fn, "an observer function is void fn(zkr_observer_t *o, const zkr_participant_t *leader, void *ctx)", zkr_observer_new(out, c, path, kind, fn, ctx))
#endif

/* Stop observing and free; after it returns fn is not running (unless
 * called from fn) and will not run again.  NULL is a no-op. */
ZKR_EXTERN void zkr_observer_free(zkr_observer_t *o);

#ifdef __cplusplus
}
#endif
#endif

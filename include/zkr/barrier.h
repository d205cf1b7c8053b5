/* Barriers (Curator's DistributedBarrier and DistributedDoubleBarrier),
 * on the same nodes as Curator's, so that C and Java processes meet in one
 * barrier.
 *
 * A barrier holds everyone back while its node exists:
 *
 *   zkr_barrier_new(&b, c, "/jobs/gate");
 *   zkr_barrier_set(b, 5000);              (one process closes the gate)
 *   zkr_barrier_wait(b, 60000);            (others wait until it is removed)
 *   zkr_barrier_remove(b, 5000);           (the one that set it opens it)
 *
 * A double barrier lets its members start together and finish together:
 *
 *   zkr_double_barrier_new(&d, c, "/jobs/round", 3);
 *   zkr_double_barrier_enter(d, 60000);    (returns once 3 have entered)
 *   ... work ...
 *   zkr_double_barrier_leave(d, 60000);    (returns once all have left)
 *
 * Nodes (as Curator 5.4 makes them; the data is empty, Curator writes its
 * host's address, which nobody reads):
 *  - barrier: `path`, PERSISTENT, its missing parents made as containers.
 *  - double barrier: each member `path/<uuid>` (a fresh random UUID for
 *    every enter, 36 characters), EPHEMERAL, the parents as containers;
 *    `path/ready`, PERSISTENT, made by the member that finds enough
 *    members and deleted by the members that leave.  Every child of
 *    `path` but "ready" is a member to Curator: put nothing else there.
 *
 * Where we differ from Curator 5.4 (its members still meet ours; what a
 * Java member does wrong, it still does):
 *  - A "ready" node made before our own member node does not let us in:
 *    it is left from an earlier round (its members crashed, or are still
 *    leaving), and Curator would let a single member through on it.  We
 *    count only the members that came after it, and when they are enough
 *    we delete it and make a new one.  So a round is the members whose
 *    node is older than the "ready" node that let them in; a member that
 *    comes after it (Curator lets it in: "a threshold, not a limit")
 *    belongs to the next round for us.
 *  - "ready" is never counted as a member (Curator counts it).
 *  - enter and leave wait on their own watches and check again on every
 *    wake: a watch event of another call, a reconnection or a spurious
 *    wake never lets a member go (Curator GH-1290, its leave's shared
 *    watcher).
 *  - leave waits for the members of its own round only, and returns only
 *    when every one of them has left (Curator lets a member go when one
 *    other is still inside, on a spurious wake).
 *  - A member whose enter or leave ends with an error or a timeout deletes
 *    its node (Curator leaves it: CURATOR-80, it holds up every leave).
 * A Java member keeps Curator's ways: it passes on a "ready" older than
 * its node, and its leave waits for every child of `path`, the next
 * round's members too.  Rounds that mix C and Java members should not
 * overlap (all have returned from leave before the next round enters).
 *
 * Rules (beyond <zkr/common.h>'s):
 *  - Every timeout holds when the link stalls (each request has the call's
 *    deadline).  A timeout of 0 is one look without waiting for anyone:
 *    its requests get up to ZKR_BARRIER_LOOK_MS.  A connection lost for a
 *    while is waited out within the timeout: the session, the node and
 *    the watches live on.
 *  - A member whose session is lost is gone from the barrier: the others
 *    count it as left (it never entered, if it was still waiting); its
 *    own call returns ZKR_ESESSIONLOST, and a leave after it too.
 *  - enter, leave and zkr_barrier_wait wait for watch events on the
 *    client's callback thread: called there they return ZKR_EDEADLK.
 *    zkr_barrier_set and _remove send one request and may be called from
 *    anywhere.
 *  - One call at a time on one object (another thread's call meanwhile:
 *    ZKR_ESTATE).  Objects are independent: several double barrier objects
 *    on one client are several members. */
#ifndef ZKR_BARRIER_H
#define ZKR_BARRIER_H

#include "zkr/client.h"
#include "zkr/common.h"
#include "zkr/errors.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How long the requests of a call with timeout 0 may take. */
#define ZKR_BARRIER_LOOK_MS 2000

typedef struct zkr_barrier zkr_barrier_t;
typedef struct zkr_double_barrier zkr_double_barrier_t;

/* A barrier on `path` (nothing is sent).  Returns ZKR_OK, ZKR_EINVAL (out,
 * c NULL; a path ZooKeeper would refuse; *out NULL), ZKR_ECLOSED,
 * ZKR_ENOMEM. */
ZKR_EXTERN int zkr_barrier_new(zkr_barrier_t **out, zkr_client_t *c, const char *path);

/* Set the barrier: create its node (and its parents).  Already set is
 * fine.  Returns ZKR_OK, ZKR_EINVAL, ZKR_ETIMEDOUT (the node may or may
 * not have been made), ZKR_ECONNLOSS (the same), ZKR_ESESSIONLOST,
 * ZKR_ENOAUTH, ZKR_ECLOSED, ZKR_ENOMEM, ZKR_ESYSTEM, ZKR_EZOOKEEPER. */
ZKR_EXTERN int zkr_barrier_set(zkr_barrier_t *b, int64_t timeout_ms);

/* Remove the barrier: delete its node; not set is fine (a node with
 * children is refused by the server: ZKR_EZOOKEEPER).  Returns
 * ZKR_OK, ZKR_EINVAL, ZKR_ETIMEDOUT, ZKR_ECONNLOSS (may or may not be
 * deleted), ZKR_ESESSIONLOST, ZKR_ENOAUTH, ZKR_ECLOSED, ZKR_ENOMEM,
 * ZKR_ESYSTEM, ZKR_EZOOKEEPER. */
ZKR_EXTERN int zkr_barrier_remove(zkr_barrier_t *b, int64_t timeout_ms);

/* Wait until the barrier's node does not exist (at once if it is not
 * set).  A lost session or a lost connection is waited out (the node is
 * read again once connected).  Returns ZKR_OK (removed), ZKR_EINVAL,
 * ZKR_ETIMEDOUT (still set, or unknown: the link was down),
 * ZKR_EDEADLK (on the callback thread), ZKR_ENOAUTH, ZKR_ECLOSED,
 * ZKR_ENOMEM, ZKR_ESYSTEM. */
ZKR_EXTERN int zkr_barrier_wait(zkr_barrier_t *b, int64_t timeout_ms);

/* NULL is a no-op.  Not during a call on it. */
ZKR_EXTERN void zkr_barrier_free(zkr_barrier_t *b);

/* A member of the double barrier on `path`, which lets members through
 * once `members` (>= 1) have entered.  Every member of one barrier must
 * give the same count.  Nothing is sent.  Returns ZKR_OK, ZKR_EINVAL (out,
 * c NULL, members 0, a path ZooKeeper would refuse; *out NULL),
 * ZKR_ECLOSED, ZKR_ENOMEM, ZKR_ESYSTEM. */
ZKR_EXTERN int zkr_double_barrier_new(zkr_double_barrier_t **out, zkr_client_t *c, const char *path,
                                      size_t members);

/* Enter: create our member node, then wait until `members` members of
 * this round have entered.  Returns ZKR_OK (inside: call leave),
 * ZKR_EINVAL, ZKR_ESTATE (inside already, or a call in progress),
 * ZKR_ETIMEDOUT (not enough members in time: our node is deleted; the
 * others may have counted it just before), ZKR_ESESSIONLOST (our node
 * went with its session), ZKR_EDELETED (someone deleted our node),
 * ZKR_EDEADLK, ZKR_ENOAUTH, ZKR_ECLOSED, ZKR_ENOMEM, ZKR_ESYSTEM,
 * ZKR_EZOOKEEPER.  On every error we are not inside, and our node is deleted (its delete
 * sent, not awaited, once the call's time is up). */
ZKR_EXTERN int zkr_double_barrier_enter(zkr_double_barrier_t *d, int64_t timeout_ms);

/* Leave: our node goes, and wait until every member of our round has
 * left (or its session is gone).  Returns ZKR_OK (all have left; the
 * round's "ready" node is deleted), ZKR_EINVAL, ZKR_ESTATE (not inside, or
 * a call in progress), ZKR_ETIMEDOUT (some are still inside; we have
 * left all the same), ZKR_ESESSIONLOST (our node went with our session
 * before we left: the others counted us as left), ZKR_EDELETED,
 * ZKR_EDEADLK (still inside: call again elsewhere), ZKR_ENOAUTH,
 * ZKR_ECLOSED, ZKR_ENOMEM, ZKR_ESYSTEM, ZKR_EZOOKEEPER.  After any
 * return but ZKR_EDEADLK and ZKR_ESTATE we are no longer inside (a
 * closed client: our node went with its session). */
ZKR_EXTERN int zkr_double_barrier_leave(zkr_double_barrier_t *d, int64_t timeout_ms);

/* 1 between an enter that returned ZKR_OK and the next leave; else 0
 * (also for NULL). */
ZKR_EXTERN int zkr_double_barrier_is_inside(zkr_double_barrier_t *d);

/* Free (NULL is a no-op; not during a call on it).  Inside, our node is
 * deleted in the background (free does not wait): the others count us as
 * left. */
ZKR_EXTERN void zkr_double_barrier_free(zkr_double_barrier_t *d);

#ifdef __cplusplus
}
#endif
#endif

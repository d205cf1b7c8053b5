/* Callbacks of the 0.2.0 types must not compile against the 1.0 headers
 * (<zkr/common.h>: ZKR__CHECKED).  tests/api/run.sh compiles this file
 * once per case, -DCASE=N, as C11 without -Werror (so that the failure is
 * the header's own check, not a warning made an error), and requires:
 *
 *   CASE 0   the 1.0 types everywhere: compiles clean with -Wall -Wextra
 *            -Werror, as C and as C++ (-x c++ -fsyntax-only);
 *   CASE 1.. one call given a function of the 0.2.0 type (or another
 *            wrong type): the compile fails, saying "zkrecipes 1.0:".
 *
 * Nothing here is ever run. */
#include <zkr/zkr.h>

#include <stddef.h>
#include <stdint.h>

#ifndef CASE
#define CASE 0
#endif

/* ---- the 1.0 types ------------------------------------------------------- */

static void hold_fn(zkr_lock_ref_t lock, zkr_hold_state_t state, const char *node_path, void *ctx)
{
    (void)lock;
    (void)state;
    (void)node_path;
    (void)ctx;
}

static void lease_fn(zkr_semaphore_t *s, zkr_hold_state_t state, const char *node_path, void *ctx)
{
    (void)s;
    (void)state;
    (void)node_path;
    (void)ctx;
}

static void acquired_fn(uint64_t acquire_id, int rc, zkr_hold_t *hold, void *ctx)
{
    (void)acquire_id;
    (void)rc;
    (void)hold;
    (void)ctx;
}

static void lease_acquired_fn(uint64_t acquire_id, int rc, zkr_lease_t *lease, void *ctx)
{
    (void)acquire_id;
    (void)rc;
    (void)lease;
    (void)ctx;
}

static void latch_fn(zkr_latch_t *l, int is_leader, int64_t token, void *ctx)
{
    (void)l;
    (void)is_leader;
    (void)token;
    (void)ctx;
}

static void selector_fn(zkr_selector_t *s, int is_leader, int64_t token, void *ctx)
{
    (void)s;
    (void)is_leader;
    (void)token;
    (void)ctx;
}

static void observe_fn(zkr_observer_t *o, const zkr_participant_t *leader, void *ctx)
{
    (void)o;
    (void)leader;
    (void)ctx;
}

static void pnode_fn(zkr_pnode_t *n, const zkr_pnode_event_t *e, void *ctx)
{
    (void)n;
    (void)e;
    (void)ctx;
}

static void group_fn(zkr_group_t *g, const zkr_group_event_t *e, void *ctx)
{
    (void)g;
    (void)e;
    (void)ctx;
}

/* ---- the 0.2.0 types (each case defines the one it passes) ----------------- */

#if CASE == 1 || CASE == 2 || CASE == 3 || CASE == 4
static void old_hold(zkr_hold_state_t state, const char *node, void *ctx)
{
    (void)state;
    (void)node;
    (void)ctx;
}
#endif
#if CASE == 5 || CASE == 7
static void old_acquired(int rc, zkr_hold_t *hold, void *ctx)
{
    (void)rc;
    (void)hold;
    (void)ctx;
}
#endif
#if CASE == 6
static void old_lease_acquired(int rc, zkr_lease_t *lease, void *ctx)
{
    (void)rc;
    (void)lease;
    (void)ctx;
}
#endif
#if CASE == 8 || CASE == 9
static void old_leader(int is_leader, int64_t token, void *ctx)
{
    (void)is_leader;
    (void)token;
    (void)ctx;
}
#endif
#if CASE == 10
static void old_observe(const zkr_participant_t *leader, void *ctx)
{
    (void)leader;
    (void)ctx;
}
#endif

/* Which function each checked call gets in this case. */
#if CASE == 1
#define HOLD_MUTEX old_hold
#elif CASE == 11
#define HOLD_MUTEX lease_fn /* a 1.0 type, but not the one this call takes */
#else
#define HOLD_MUTEX hold_fn
#endif
#if CASE == 2
#define HOLD_RWLOCK old_hold
#else
#define HOLD_RWLOCK hold_fn
#endif
#if CASE == 3
#define HOLD_SMUTEX old_hold
#else
#define HOLD_SMUTEX hold_fn
#endif
#if CASE == 4
#define LEASE_FN old_hold /* 0.2.0: a semaphore's listener was a zkr_hold_fn */
#else
#define LEASE_FN lease_fn
#endif
#if CASE == 5
#define LOCK_ACQUIRED old_acquired
#else
#define LOCK_ACQUIRED acquired_fn
#endif
#if CASE == 6
#define LEASE_ACQUIRED old_lease_acquired
#else
#define LEASE_ACQUIRED lease_acquired_fn
#endif
#if CASE == 7
#define LEADER_ACQUIRED old_acquired
#else
#define LEADER_ACQUIRED acquired_fn
#endif
#if CASE == 8
#define LATCH_FN old_leader
#else
#define LATCH_FN latch_fn
#endif
#if CASE == 9
#define SELECTOR_FN old_leader
#else
#define SELECTOR_FN selector_fn
#endif
#if CASE == 10
#define OBSERVE_FN old_observe
#else
#define OBSERVE_FN observe_fn
#endif

/* Listeners added in 1.x: a function of another type fails too. */
#if CASE == 12
#define PNODE_FN group_fn
#else
#define PNODE_FN pnode_fn
#endif
#if CASE == 13
#define GROUP_FN pnode_fn
#else
#define GROUP_FN group_fn
#endif

int uses(zkr_client_t *c, zkr_mutex_t *m, zkr_rwlock_t *l, zkr_semaphore_mutex_t *sm, zkr_semaphore_t *s,
         zkr_latch_t *la, zkr_selector_t *se);

int uses(zkr_client_t *c, zkr_mutex_t *m, zkr_rwlock_t *l, zkr_semaphore_mutex_t *sm, zkr_semaphore_t *s,
         zkr_latch_t *la, zkr_selector_t *se)
{
    uint64_t id = 0;
    zkr_observer_t *o = NULL;
    int rc = 0;
    rc |= zkr_mutex_set_hold_listener(m, HOLD_MUTEX, NULL);
    rc |= zkr_rwlock_set_hold_listener(l, HOLD_RWLOCK, NULL);
    rc |= zkr_semaphore_mutex_set_hold_listener(sm, HOLD_SMUTEX, NULL);
    rc |= zkr_semaphore_set_hold_listener(s, LEASE_FN, NULL);
    rc |= zkr_lock_acquire_async(zkr_mutex_ref(m), 1000, LOCK_ACQUIRED, NULL, &id);
    rc |= zkr_semaphore_acquire_async(s, 1000, LEASE_ACQUIRED, NULL, &id);
    rc |= zkr_leader_acquire_async(c, "/leader", "me", 1000, LEADER_ACQUIRED, NULL, &id);
    rc |= zkr_latch_set_listener(la, LATCH_FN, NULL);
    rc |= zkr_selector_set_listener(se, SELECTOR_FN, NULL);
    rc |= zkr_observer_new(&o, c, "/leader", ZKR_ELECTION_LATCH, OBSERVE_FN, NULL);
    rc |= zkr_pnode_set_listener(NULL, PNODE_FN, NULL);
    rc |= zkr_group_set_listener(NULL, GROUP_FN, NULL);
    /* NULL passes every check */
    rc |= zkr_mutex_set_hold_listener(m, NULL, NULL);
    rc |= zkr_latch_set_listener(la, NULL, NULL);
    zkr_observer_free(o);
    return rc;
}

int main(void)
{
    return 0;
}

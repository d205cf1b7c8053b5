/* The connection-state machine (Curator's ConnectionState), as a pure
 * function of the C client's raw session states: no locks, no ZooKeeper
 * calls, unit-tested without a server (tests/test_units.c). */
#include "config.h"

#include "session/core_private.h"

const char *zkr_state_name(zkr_state_t s)
{
    switch (s) {
    case ZKR_STATE_LATENT: return "LATENT";
    case ZKR_STATE_CONNECTED: return "CONNECTED";
    case ZKR_STATE_SUSPENDED: return "SUSPENDED";
    case ZKR_STATE_RECONNECTED: return "RECONNECTED";
    case ZKR_STATE_LOST: return "LOST";
    case ZKR_STATE_READ_ONLY: return "READ_ONLY";
    case ZKR_STATE_CLOSED: return "CLOSED";
    }
    return "UNKNOWN";
}

int zkr__is_usable_state(zkr_state_t s)
{
    return s == ZKR_STATE_CONNECTED || s == ZKR_STATE_RECONNECTED;
}

int zkr__is_connected_state(zkr_state_t s)
{
    return zkr__is_usable_state(s) || s == ZKR_STATE_READ_ONLY;
}

/* Move to `s`; report it unless it is the state already reported. */
static void report(zkr__sm_t *sm, zkr__sm_effect_t *e, zkr_state_t s)
{
    if (s == sm->state)
        return; /* duplicates are not reported */
    sm->state = s;
    e->report = s;
}

/* ZooKeeper's state constants are const ints, not macros: if, not case. */
zkr__sm_effect_t zkr__sm_step(zkr__sm_t *sm, int zs)
{
    zkr__sm_effect_t e = {.report = ZKR_STATE_LATENT};
    if (zs == ZOO_CONNECTED_STATE) {
        sm->connected = 1;
        e.session_up = 1;
        e.clear_lost_timer = 1;
        if (!sm->ever_connected) {
            sm->ever_connected = 1;
            report(sm, &e, ZKR_STATE_CONNECTED);
        } else if (!zkr__is_usable_state(sm->state)) {
            report(sm, &e, ZKR_STATE_RECONNECTED);
        }
    } else if (zs == ZOO_CONNECTING_STATE || zs == ZOO_ASSOCIATING_STATE) {
        sm->connected = 0;
        if (zkr__is_connected_state(sm->state)) {
            report(sm, &e, ZKR_STATE_SUSPENDED);
            e.arm_lost_timer = 1;
        }
    } else if (zs == ZOO_EXPIRED_SESSION_STATE) {
        sm->connected = 0;
        e.clear_lost_timer = 1;
        e.rebuild = 1;
        if (sm->ever_connected)
            report(sm, &e, ZKR_STATE_LOST);
    } else if (zs == ZOO_AUTH_FAILED_STATE) {
        sm->connected = 0;
        e.clear_lost_timer = 1;
        e.auth_failed = 1;
        if (sm->ever_connected)
            report(sm, &e, ZKR_STATE_LOST);
    } else if (zs == ZOO_READONLY_STATE) {
        sm->connected = 1;
        e.session_up = 1;
        e.clear_lost_timer = 1;
        sm->ever_connected = 1;
        report(sm, &e, ZKR_STATE_READ_ONLY);
    }
    return e;
}

zkr__sm_effect_t zkr__sm_lost_timer(zkr__sm_t *sm)
{
    zkr__sm_effect_t e = {.report = ZKR_STATE_LATENT};
    if (sm->state != ZKR_STATE_SUSPENDED)
        return e;
    e.clear_lost_timer = 1;
    e.rebuild = 1;
    report(sm, &e, ZKR_STATE_LOST);
    return e;
}

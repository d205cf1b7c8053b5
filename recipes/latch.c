/* The leader latch (Curator LeaderLatch): a seat in the election whose
 * thread queues with a "latch-" node carrying the id, leads while the node
 * is first and its hold stands (IN_DOUBT counts as not leading under the
 * standard policy), and rejoins with a new node when the hold is lost
 * (session gone, node or path deleted), until close. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "recipes/election.h"

struct zkr_latch {
    zkr__seat_t seat;
    zkr_leader_policy_t policy; /* seat.mu */
    int notify_on_close;        /* seat.mu */
};

int zkr_latch_new(zkr_latch_t **out, zkr_client_t *c, const char *path, const char *id)
{
    if (out)
        *out = NULL;
    if (!id)
        id = "";
    if (!out || !c || !zkr__path_valid(path) || !zkr__leader_id_ok(id))
        return ZKR_EINVAL;
    zkr_latch_t *l = calloc(1, sizeof *l);
    if (!l)
        return ZKR_ENOMEM;
    int rc = zkr__seat_init(&l->seat, c, path, id, &zkr__latch_driver);
    if (rc != ZKR_OK) {
        free(l);
        return rc;
    }
    *out = l;
    return ZKR_OK;
}

int zkr_latch_set_policy(zkr_latch_t *l, zkr_leader_policy_t policy)
{
    if (!l || (policy != ZKR_LEADER_POLICY_STANDARD && policy != ZKR_LEADER_POLICY_SESSION))
        return ZKR_EINVAL;
    pthread_mutex_lock(&l->seat.mu);
    int rc = l->seat.started ? ZKR_ESTATE : ZKR_OK;
    if (rc == ZKR_OK)
        l->policy = policy;
    pthread_mutex_unlock(&l->seat.mu);
    return rc;
}

int zkr_latch_set_listener(zkr_latch_t *l, zkr_leader_fn fn, void *ctx)
{
    return l ? zkr__seat_set_listener(&l->seat, fn, ctx) : ZKR_EINVAL;
}

/* Lead while the node stands; returns when the hold is lost or the latch
 * closes, no longer leading.  seat.mu held. */
static void lead_locked(zkr_latch_t *l)
{
    zkr__seat_t *s = &l->seat;
    while (!s->closing) {
        zkr_hold_state_t st = zkr__seat_state_locked(s);
        if (st == ZKR_HOLD_LOST)
            break;
        int lead = st == ZKR_HOLD_SAFE || (st == ZKR_HOLD_IN_DOUBT && l->policy == ZKR_LEADER_POLICY_SESSION);
        if (lead != s->leader) {
            s->leader = lead;
            zkr__tell_locked(&s->tell, lead, s->node.czxid);
            pthread_cond_broadcast(&s->cond);
        }
        zkr__seat_wait_locked(s, INT64_MAX);
    }
    s->leader = 0;
    if (s->closing && !l->notify_on_close)
        s->tell.told = 0; /* SILENT: nobody is told */
    else
        zkr__tell_locked(&s->tell, 0, 0);
    pthread_cond_broadcast(&s->cond);
}

static void *latch_main(void *arg)
{
    zkr_latch_t *l = arg;
    zkr__seat_t *s = &l->seat;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        int closing = s->closing;
        pthread_mutex_unlock(&s->mu);
        if (closing)
            break;
        int rc = zkr__seat_take(s);
        if (rc != ZKR_OK) {
            zkr__seat_backoff(s, rc); /* the client closing: until the latch closes */
            continue;
        }
        pthread_mutex_lock(&s->mu);
        lead_locked(l);
        pthread_mutex_unlock(&s->mu);
        zkr__seat_give_up(s); /* reset: the old node goes, a new one comes */
    }
    zkr__seat_exit(s);
    return NULL;
}

int zkr_latch_start(zkr_latch_t *l)
{
    return l ? zkr__seat_start(&l->seat, latch_main, l) : ZKR_EINVAL;
}

int zkr_latch_await(zkr_latch_t *l, int64_t timeout_ms)
{
    if (!l)
        return ZKR_EINVAL;
    zkr__seat_t *s = &l->seat;
    int64_t deadline = zkr__deadline(timeout_ms);
    pthread_mutex_lock(&s->mu);
    int rc;
    for (;;) {
        if (!s->started || s->closed) {
            rc = ZKR_ESTATE;
            break;
        }
        if (zkr__seat_client_closed(s)) {
            rc = ZKR_ECLOSED;
            break;
        }
        if (s->leader) {
            rc = ZKR_OK;
            break;
        }
        if (zkr__now_ms() >= deadline) {
            rc = ZKR_ETIMEDOUT;
            break;
        }
        zkr__seat_wait_locked(s, deadline);
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int zkr_latch_has_leadership(zkr_latch_t *l)
{
    if (!l)
        return 0;
    pthread_mutex_lock(&l->seat.mu);
    int lead = zkr__seat_leading_locked(&l->seat);
    pthread_mutex_unlock(&l->seat.mu);
    return lead;
}

int zkr_latch_fencing_token(zkr_latch_t *l, int64_t *token)
{
    return l && token ? zkr__seat_token(&l->seat, token) : ZKR_EINVAL;
}

const char *zkr_latch_id(zkr_latch_t *l)
{
    return l ? l->seat.data : "";
}

int zkr_latch_proclaim(zkr_latch_t *l, const char *value)
{
    return l ? zkr__seat_proclaim(&l->seat, value) : ZKR_EINVAL;
}

int zkr_latch_guarded_write(zkr_latch_t *l, zkr_op_t *ops, size_t n)
{
    return l ? zkr__seat_guarded_write(&l->seat, ops, n) : ZKR_EINVAL;
}

int zkr_latch_close(zkr_latch_t *l, zkr_latch_close_mode_t mode)
{
    if (!l || (mode != ZKR_LATCH_CLOSE_SILENT && mode != ZKR_LATCH_CLOSE_NOTIFY_LEADER))
        return ZKR_EINVAL;
    zkr__seat_t *s = &l->seat;
    zkr__node_t node = {0};
    pthread_mutex_lock(&s->mu);
    if (s->started && !s->closed && !zkr__tell_in_call_locked(&s->tell)) { /* else refused below */
        l->notify_on_close = mode == ZKR_LATCH_CLOSE_NOTIFY_LEADER;
        /* Leave at once from this thread, without waiting for the latch's
         * own to wake up: no longer leader (told first if asked), then our
         * node goes; the thread sees `closing` and ends. */
        if (s->leader) {
            s->leader = 0;
            if (l->notify_on_close)
                zkr__tell_locked(&s->tell, 0, 0);
            else
                s->tell.told = 0; /* SILENT: nobody is told */
            pthread_cond_broadcast(&s->cond);
        }
        s->closing = 1;
        node = s->node;
        memset(&s->node, 0, sizeof s->node);
        pthread_cond_broadcast(&s->cond);
    }
    pthread_mutex_unlock(&s->mu);
    if (node.path)
        zkr__node_delete(s->c, &node); /* a lost node's delete ends in the background */
    return zkr__seat_close(s, 0);
}

void zkr_latch_free(zkr_latch_t *l)
{
    if (!l)
        return;
    zkr_latch_close(l, ZKR_LATCH_CLOSE_SILENT);
    zkr__seat_destroy(&l->seat);
    free(l);
}

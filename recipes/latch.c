/* The leader latch (Curator LeaderLatch): a seat in the election that
 * queues with a "latch-" node carrying the id, as an asynchronous acquire
 * on the one machine (no thread of its own: the acquire's end and the
 * node's hold states come on the callback thread), leads while the node
 * is first and its hold stands (IN_DOUBT counts as not leading under the
 * standard policy: zkr__seat_leading_locked decides, reading the hold's
 * state as it is now), and rejoins with a new node when the hold is lost
 * (session gone, node or path deleted), until close. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "recipes/election.h"

struct zkr_latch {
    zkr__seat_t seat;
    int notify_on_close;        /* seat.mu */
    int acquiring;              /* seat.mu: an acquire started, not yet ended */
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
        l->seat.doubt_leads = policy == ZKR_LEADER_POLICY_SESSION;
    pthread_mutex_unlock(&l->seat.mu);
    return rc;
}

int zkr_latch_set_listener(zkr_latch_t *l, zkr_latch_fn fn, void *ctx)
{
    return l ? zkr__seat_set_listener(&l->seat, (zkr__leader_listener_t){.latch_fn = fn, .obj = l, .ctx = ctx})
             : ZKR_EINVAL;
}

/* The latch has no thread of its own: it queues with an acquire on the
 * one machine, delivered on the callback thread (on_client), and its
 * node's hold states are told there too; both look at the latch here. */
static void rejoin_locked(zkr_latch_t *l, int64_t delay_ms);

/* Our node's state decides what is told: lead, or, once the hold is lost,
 * give the node up and join again.  seat.mu held; the callback thread (or
 * the closing one). */
static void look_locked(zkr_latch_t *l)
{
    zkr__seat_t *s = &l->seat;
    if (!s->node.path || s->closing)
        return;
    zkr_hold_state_t st = zkr__seat_state_locked(s);
    int lead = zkr__seat_state_leads(s, st);
    if (lead != s->leader) {
        s->leader = lead;
        zkr__tell_locked(&s->tell, lead, lead ? s->node.czxid : 0);
        pthread_cond_broadcast(&s->cond);
    }
    if (st != ZKR_HOLD_LOST)
        return;
    /* reset: the old node goes (a lost node's delete ends in the
     * background), a new one comes at once */
    zkr__node_t node = s->node;
    memset(&s->node, 0, sizeof s->node);
    zkr__node_delete_nowait(s->c, &node);
    if (!zkr__seat_client_closed(s))
        rejoin_locked(l, 0);
}

/* The hold's state changed (callback thread). */
static void latch_hold_fn(zkr_lock_ref_t lock, zkr_hold_state_t state, const char *node_path, void *ctx)
{
    (void)lock;
    (void)state;
    zkr_latch_t *l = ctx;
    pthread_mutex_lock(&l->seat.mu);
    if (l->seat.node.path && node_path && strcmp(node_path, l->seat.node.path) == 0)
        look_locked(l);
    pthread_mutex_unlock(&l->seat.mu);
}

/* The acquire ended (callback thread, or the thread closing the client). */
static void latch_deliver(zkr_client_t *c, int rc, zkr__node_t *node, const zkr__async_done_t *d)
{
    zkr_latch_t *l = d->ctx;
    zkr__seat_t *s = &l->seat;
    zkr__node_t drop = {0};
    pthread_mutex_lock(&s->mu);
    l->acquiring = 0;
    if (rc == ZKR_OK && s->closing) {
        drop = *node; /* closed meanwhile: it goes */
        memset(node, 0, sizeof *node);
    } else if (rc == ZKR_OK) {
        s->node = *node;
        memset(node, 0, sizeof *node);
        s->attempts = 0;
        look_locked(l);
    } else if (!s->closing && rc != ZKR_ECLOSED && rc != ZKR_ECANCELED) {
        rejoin_locked(l, zkr__seat_retry_ms(s, rc)); /* our node gone: at once */
    }
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->mu);
    if (drop.path)
        zkr__node_delete_nowait(c, &drop);
}

/* Queue for leadership, after delay_ms: ZKR_OK, ZKR_ECLOSED, ZKR_ENOMEM.
 * seat.mu held. */
static int join_locked(zkr_latch_t *l, int64_t delay_ms)
{
    zkr__seat_t *s = &l->seat;
    zkr__async_target_t t = {.c = s->c, .dir = s->path, .drv = s->drv, .owner = l, .data = s->data,
                             .data_len = (int)strlen(s->data), .hold = {.fn = latch_hold_fn, .ctx = l}, .delay_ms = delay_ms};
    zkr__async_done_t d = {.deliver = latch_deliver, .kind = 0, .fn = NULL, .ctx = l, .on_client = 1};
    int rc = zkr__async_start(&t, -1, &d, NULL);
    if (rc == ZKR_OK)
        l->acquiring = 1;
    return rc;
}

static void rejoin_locked(zkr_latch_t *l, int64_t delay_ms)
{
    int rc = join_locked(l, delay_ms);
    if (rc != ZKR_OK && rc != ZKR_ECLOSED)
        zkr__log(l->seat.c, ZKR_LOG_ERROR, "election %s: cannot join again (%s); out until closed", l->seat.path,
                 zkr_strerror(rc));
}

static int first_join(void *arg)
{
    return join_locked(arg, 0);
}

int zkr_latch_start(zkr_latch_t *l)
{
    return l ? zkr__seat_start(&l->seat, first_join, l) : ZKR_EINVAL;
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
        if (zkr__seat_leading_locked(s)) {
            rc = ZKR_OK;
            break;
        }
        if (zkr__seat_client_closed(s)) {
            rc = ZKR_ECLOSED;
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

int zkr_latch_node_path(zkr_latch_t *l, char **path)
{
    if (path)
        *path = NULL;
    return l && path ? zkr__seat_node_path(&l->seat, path) : ZKR_EINVAL;
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

/* After close, off the callback thread: everything told has run. */
static void settle(zkr_latch_t *l)
{
    zkr__tell_finish(&l->seat.tell);
}

int zkr_latch_close(zkr_latch_t *l, zkr_latch_close_mode_t mode)
{
    if (!l || (mode != ZKR_LATCH_CLOSE_SILENT && mode != ZKR_LATCH_CLOSE_NOTIFY_LEADER))
        return ZKR_EINVAL;
    zkr__seat_t *s = &l->seat;
    pthread_mutex_lock(&s->mu);
    if (!s->started || s->closed) {
        pthread_mutex_unlock(&s->mu);
        return ZKR_ESTATE;
    }
    /* No longer leader (told first if asked; SILENT: nothing told is
     * told any more), then our node goes, and the acquire in progress, if
     * any, is cancelled. */
    s->closed = s->closing = 1;
    l->notify_on_close = mode == ZKR_LATCH_CLOSE_NOTIFY_LEADER;
    if (s->leader && l->notify_on_close)
        zkr__tell_locked(&s->tell, 0, 0);
    else if (!l->notify_on_close)
        s->tell.muted = 1;
    s->leader = 0;
    zkr__node_t node = s->node;
    memset(&s->node, 0, sizeof s->node);
    pthread_cond_broadcast(&s->cond);
    int own = zkr__client_on_own_thread(s->c);
    pthread_mutex_unlock(&s->mu);
    if (node.path && own)
        zkr__node_delete_nowait(s->c, &node); /* the client thread never waits on the network */
    else if (node.path)
        zkr__node_delete(s->c, &node); /* a lost node's delete ends in the background */
    /* The acquire in progress is cancelled and will not be delivered to
     * us (its grant, if any, is deleted): nothing to wait for, neither the
     * client thread nor a close of the client under way (a close from
     * inside zkr_client_with_handle while another thread closes the
     * client would otherwise wait for each other). */
    zkr__async_detach(s->c, l);
    pthread_mutex_lock(&s->mu);
    l->acquiring = 0;
    pthread_mutex_unlock(&s->mu);
    if (own) { /* what is left to tell, now */
        zkr__tell_finish(&s->tell);
        return ZKR_OK;
    }
    settle(l);
    return ZKR_OK;
}

void zkr_latch_free(zkr_latch_t *l)
{
    if (!l)
        return;
    zkr__seat_t *s = &l->seat;
    zkr_latch_close(l, ZKR_LATCH_CLOSE_SILENT);
    pthread_mutex_lock(&s->mu);
    if (zkr__tell_in_call_locked(&s->tell)) {
        /* Its listener's return is still to come on this very thread:
         * freeing now would hand it freed memory.  Left as it is
         * (documented). */
        pthread_mutex_unlock(&s->mu);
        zkr__log(s->c, ZKR_LOG_ERROR, "zkr_latch_free from its own listener: latch %s not freed", s->path);
        return;
    }
    pthread_mutex_unlock(&s->mu);
    settle(l); /* (if it was closed on the client thread) */
    zkr__seat_destroy(&l->seat);
    free(l);
}

/* The leader selector (Curator LeaderSelector): a seat in the election
 * whose thread queues for the mutex on the path ("lock-" nodes carrying
 * the id), runs the program's takeLeadership while it holds it, and
 * releases it when that returns; again with auto requeue.  The callback is
 * told to stop (a flag and a wait) when the hold goes IN_DOUBT or LOST or
 * on interrupt or close. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "recipes/election.h"

struct zkr_selector {
    zkr__seat_t seat;
    zkr_take_leadership_fn fn;
    void *ctx;
    /* seat.mu */
    int auto_requeue;
    int queued;      /* a term is asked for */
    int interrupted; /* the running term was told to stop */
};

int zkr_selector_new(zkr_selector_t **out, zkr_client_t *c, const char *path, const char *id,
                     zkr_take_leadership_fn fn, void *ctx)
{
    if (out)
        *out = NULL;
    if (!out || !c || !fn || !zkr__path_valid(path) || (id && !zkr__leader_id_ok(id)))
        return ZKR_EINVAL;
    zkr_selector_t *s = calloc(1, sizeof *s);
    char *host = id && *id ? NULL : zkr__host_address();
    if (!s || (!(id && *id) && !host)) {
        free(s);
        free(host);
        return ZKR_ENOMEM;
    }
    int rc = zkr__seat_init(&s->seat, c, path, host ? host : id, &zkr__lock_driver);
    free(host);
    if (rc != ZKR_OK) {
        free(s);
        return rc;
    }
    s->fn = fn;
    s->ctx = ctx;
    *out = s;
    return ZKR_OK;
}

int zkr_selector_set_auto_requeue(zkr_selector_t *s, int on)
{
    if (!s)
        return ZKR_EINVAL;
    pthread_mutex_lock(&s->seat.mu);
    s->auto_requeue = on != 0;
    pthread_mutex_unlock(&s->seat.mu);
    return ZKR_OK;
}

int zkr_selector_set_listener(zkr_selector_t *s, zkr_selector_fn fn, void *ctx)
{
    return s ? zkr__seat_set_listener(&s->seat, (zkr__leader_listener_t){.selector_fn = fn, .obj = s, .ctx = ctx})
             : ZKR_EINVAL;
}

/* seat.mu held. */
static int stop_locked(zkr_selector_t *s)
{
    zkr__seat_t *t = &s->seat;
    return !t->leader || t->closing || s->interrupted || zkr__seat_state_locked(t) != ZKR_HOLD_SAFE;
}

/* One term: the callback runs with no lock held. */
static void term(zkr_selector_t *s)
{
    zkr__seat_t *t = &s->seat;
    pthread_mutex_lock(&t->mu);
    t->leader = 1;
    s->interrupted = 0;
    int64_t token = t->node.czxid;
    zkr__tell_locked(&t->tell, 1, token);
    pthread_mutex_unlock(&t->mu);
    s->fn(s, token, s->ctx);
    pthread_mutex_lock(&t->mu);
    t->leader = 0;
    zkr__tell_locked(&t->tell, 0, 0);
    s->queued = s->auto_requeue && !t->closing;
    pthread_cond_broadcast(&t->cond);
    pthread_mutex_unlock(&t->mu);
    zkr__seat_give_up(t); /* the mutex is released */
}

static void *selector_main(void *arg);

/* The selector's thread (seat.mu held). */
static int spawn(void *arg)
{
    zkr_selector_t *s = arg;
    return pthread_create(&s->seat.thread, NULL, selector_main, s) == 0 ? ZKR_OK : ZKR_ESYSTEM;
}

static void *selector_main(void *arg)
{
    zkr_selector_t *s = arg;
    zkr__seat_t *t = &s->seat;
    for (;;) {
        pthread_mutex_lock(&t->mu);
        while (!t->closing && !s->queued)
            zkr__seat_wait_locked(t, INT64_MAX);
        int closing = t->closing;
        pthread_mutex_unlock(&t->mu);
        if (closing)
            break;
        int rc = zkr__seat_take(t);
        if (rc == ZKR_OK)
            term(s);
        else
            zkr__seat_backoff(t, rc);
    }
    zkr__seat_exit(t);
    return NULL;
}

int zkr_selector_start(zkr_selector_t *s)
{
    if (!s)
        return ZKR_EINVAL;
    pthread_mutex_lock(&s->seat.mu);
    int first = !s->seat.started;
    if (first)
        s->queued = 1;
    pthread_mutex_unlock(&s->seat.mu);
    return zkr__seat_start(&s->seat, spawn, s);
}

int zkr_selector_requeue(zkr_selector_t *s)
{
    if (!s)
        return ZKR_EINVAL;
    pthread_mutex_lock(&s->seat.mu);
    int rc = !s->seat.started || s->seat.closed ? ZKR_ESTATE : ZKR_OK;
    if (rc == ZKR_OK && !s->seat.leader) {
        s->queued = 1;
        pthread_cond_broadcast(&s->seat.cond);
    }
    pthread_mutex_unlock(&s->seat.mu);
    return rc;
}

int zkr_selector_should_stop(zkr_selector_t *s)
{
    if (!s)
        return 1;
    pthread_mutex_lock(&s->seat.mu);
    int stop = stop_locked(s);
    pthread_mutex_unlock(&s->seat.mu);
    return stop;
}

int zkr_selector_wait_stop(zkr_selector_t *s, int64_t timeout_ms)
{
    if (!s)
        return ZKR_EINVAL;
    int64_t deadline = zkr__deadline(timeout_ms);
    pthread_mutex_lock(&s->seat.mu);
    int stop;
    while (!(stop = stop_locked(s)) && zkr__now_ms() < deadline)
        zkr__seat_wait_locked(&s->seat, deadline);
    pthread_mutex_unlock(&s->seat.mu);
    return stop ? ZKR_OK : ZKR_ETIMEDOUT;
}

int zkr_selector_interrupt(zkr_selector_t *s)
{
    if (!s)
        return ZKR_EINVAL;
    pthread_mutex_lock(&s->seat.mu);
    int rc = s->seat.leader ? ZKR_OK : ZKR_ENOTLEADER;
    if (rc == ZKR_OK) {
        s->interrupted = 1;
        pthread_cond_broadcast(&s->seat.cond);
    }
    pthread_mutex_unlock(&s->seat.mu);
    return rc;
}

int zkr_selector_has_leadership(zkr_selector_t *s)
{
    if (!s)
        return 0;
    pthread_mutex_lock(&s->seat.mu);
    int lead = zkr__seat_leading_locked(&s->seat);
    pthread_mutex_unlock(&s->seat.mu);
    return lead;
}

int zkr_selector_node_path(zkr_selector_t *s, char **path)
{
    if (path)
        *path = NULL;
    return s && path ? zkr__seat_node_path(&s->seat, path) : ZKR_EINVAL;
}

int zkr_selector_fencing_token(zkr_selector_t *s, int64_t *token)
{
    return s && token ? zkr__seat_token(&s->seat, token) : ZKR_EINVAL;
}

int zkr_selector_proclaim(zkr_selector_t *s, const char *value)
{
    return s ? zkr__seat_proclaim(&s->seat, value) : ZKR_EINVAL;
}

int zkr_selector_guarded_write(zkr_selector_t *s, zkr_op_t *ops, size_t n)
{
    return s ? zkr__seat_guarded_write(&s->seat, ops, n) : ZKR_EINVAL;
}

int zkr_selector_close(zkr_selector_t *s)
{
    if (!s)
        return ZKR_EINVAL;
    pthread_mutex_lock(&s->seat.mu);
    int own = s->seat.started && pthread_equal(s->seat.thread, pthread_self());
    pthread_mutex_unlock(&s->seat.mu);
    return zkr__seat_close(&s->seat, own);
}

void zkr_selector_free(zkr_selector_t *s)
{
    if (!s)
        return;
    if (zkr_selector_close(s) == ZKR_EDEADLK) {
        /* From its own callback or listener: its thread still runs (and
         * returns into it).  Freeing now would hand it freed memory: left
         * as it is (documented), as zkr_latch_free does. */
        zkr__log(s->seat.c, ZKR_LOG_ERROR, "zkr_selector_free from its own callback: selector %s not freed",
                 s->seat.path);
        return;
    }
    zkr__seat_destroy(&s->seat);
    free(s);
}

/* A participant's seat in an election, shared by the latch and the
 * selector: the object's thread, its node (taken through the one acquire
 * machine, with data, and tracked so that its hold states wake the
 * thread), the wait between attempts, and the close that ends the thread
 * (cancelling the acquire in progress) and tells the listener what is
 * left to tell. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "recipes/election.h"

#define BACKOFF_MIN_MS 50
#define BACKOFF_MAX_MS 2000

int zkr__seat_init(zkr__seat_t *s, zkr_client_t *c, const char *path, const char *data,
                   const zkr__driver_t *drv)
{
    memset(s, 0, sizeof *s);
    s->drv = drv;
    s->path = strdup(path);
    s->data = strdup(data);
    if (!s->path || !s->data) {
        free(s->path);
        free(s->data);
        return ZKR_ENOMEM;
    }
    if (pthread_mutex_init(&s->mu, NULL) != 0 || zkr__cond_init(&s->cond) != 0) {
        free(s->path);
        free(s->data);
        return ZKR_ESYSTEM;
    }
    int rc = zkr__client_retain(c);
    if (rc != ZKR_OK) {
        pthread_cond_destroy(&s->cond);
        pthread_mutex_destroy(&s->mu);
        free(s->path);
        free(s->data);
        return rc;
    }
    s->c = c;
    return ZKR_OK;
}

int zkr__seat_set_listener(zkr__seat_t *s, zkr__leader_listener_t who)
{
    /* Any time until closed: the next change is told to it (what was told
     * before is not told again; zkr_*_has_leadership says where it
     * stands).  The client thread reads fn under s->mu. */
    pthread_mutex_lock(&s->mu);
    int rc = s->closed ? ZKR_ESTATE : ZKR_OK;
    if (rc == ZKR_OK)
        s->tell.who = who;
    pthread_mutex_unlock(&s->mu);
    return rc;
}

static int tell_start(zkr__seat_t *s)
{
    zkr__leader_listener_t who = s->tell.who;
    int rc = zkr__tell_init(&s->tell, s->c, &s->mu, &s->cond);
    s->tell.who = who;
    return rc;
}

int zkr__seat_start(zkr__seat_t *s, int (*go)(void *arg), void *arg)
{
    pthread_mutex_lock(&s->mu);
    int rc = s->started ? ZKR_ESTATE : ZKR_OK;
    if (rc == ZKR_OK && zkr_client_state(s->c) == ZKR_STATE_CLOSED)
        rc = ZKR_ECLOSED;
    if (rc == ZKR_OK)
        rc = tell_start(s);
    if (rc == ZKR_OK && (rc = go(arg)) != ZKR_OK) {
        pthread_mutex_unlock(&s->mu);
        zkr__tell_finish(&s->tell);
        return rc;
    }
    if (rc == ZKR_OK)
        s->started = 1;
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int zkr__seat_client_closed(zkr__seat_t *s)
{
    return zkr_client_state(s->c) == ZKR_STATE_CLOSED;
}

/* Wait on the seat until woken or the deadline, looking at the client's
 * close now and then.  s->mu held. */
void zkr__seat_wait_locked(zkr__seat_t *s, int64_t deadline)
{
    int64_t slice = zkr__now_ms() + ZKR__CLOSED_POLL_MS;
    zkr__cond_wait_until(&s->cond, &s->mu, deadline < slice ? deadline : slice);
}

/* The hold's state changed (client thread): the seat's thread looks. */
static void seat_hold_fn(zkr_lock_ref_t lock, zkr_hold_state_t state, const char *node_path, void *ctx)
{
    (void)lock;
    (void)state;
    (void)node_path;
    zkr__seat_t *s = ctx;
    pthread_mutex_lock(&s->mu);
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->mu);
}

int zkr__seat_take(zkr__seat_t *s)
{
    zkr__node_t node;
    int rc = zkr__client_enter(s->c);
    if (rc != ZKR_OK)
        return rc;
    zkr__async_target_t t = {.c = s->c, .dir = s->path, .drv = s->drv, .owner = s, .data = s->data,
                             .data_len = (int)strlen(s->data), .hold = {.fn = seat_hold_fn, .ctx = s}};
    rc = zkr__acquire(&t, INT64_MAX, &node); /* zkr__seat_close cancels it */
    zkr__client_leave(s->c);
    if (rc == ZKR_OK) {
        pthread_mutex_lock(&s->mu);
        s->node = node;
        s->attempts = 0;
        pthread_mutex_unlock(&s->mu);
    }
    return rc;
}

int zkr__seat_state_leads(const zkr__seat_t *s, zkr_hold_state_t st)
{
    return st == ZKR_HOLD_SAFE || (st == ZKR_HOLD_IN_DOUBT && s->doubt_leads);
}

int zkr__seat_leading_locked(zkr__seat_t *s)
{
    /* (its session ends with the client: LOST then) */
    return s->leader && zkr__seat_state_leads(s, zkr__seat_state_locked(s));
}

zkr_hold_state_t zkr__seat_state_locked(zkr__seat_t *s)
{
    if (zkr__seat_client_closed(s))
        return ZKR_HOLD_LOST; /* its session is closing with the client */
    return zkr__node_hold_state(s->c, &s->node);
}

void zkr__seat_give_up(zkr__seat_t *s)
{
    pthread_mutex_lock(&s->mu);
    zkr__node_t node = s->node;
    memset(&s->node, 0, sizeof s->node);
    pthread_mutex_unlock(&s->mu);
    if (node.path)
        zkr__node_delete(s->c, &node); /* a lost node's delete is finished in the background */
}

int64_t zkr__seat_retry_ms(zkr__seat_t *s, int rc)
{
    /* Our node gone (deleted, or with the session): join again at once,
     * as Curator's reset does; anything else, or again, after a pause. */
    int expected = rc == ZKR_ESESSIONLOST || rc == ZKR_EDELETED;
    int64_t ms = expected && s->attempts == 0 ? 0 : BACKOFF_MIN_MS << (s->attempts < 6 ? s->attempts : 6);
    s->attempts++;
    if (ms > BACKOFF_MAX_MS)
        ms = BACKOFF_MAX_MS;
    if (!expected && rc != ZKR_ECANCELED && rc != ZKR_ECLOSED)
        zkr__log(s->c, ZKR_LOG_WARN, "election %s: joining failed (%s); trying again", s->path,
                 zkr_strerror(rc));
    return ms;
}

void zkr__seat_backoff(zkr__seat_t *s, int rc)
{
    pthread_mutex_lock(&s->mu);
    int64_t until = zkr__now_ms() + zkr__seat_retry_ms(s, rc);
    while (!s->closing && zkr__now_ms() < until)
        zkr__seat_wait_locked(s, until);
    pthread_mutex_unlock(&s->mu);
}

/* Our node as a guard while leading: ZKR_OK, ZKR_ENOTLEADER, ZKR_ENOMEM. */
static int leading_guard(zkr__seat_t *s, zkr__guard_t *g)
{
    pthread_mutex_lock(&s->mu);
    int rc = zkr__seat_leading_locked(s) ? zkr__guard_fill(s->c, &s->node, g) : ZKR_ENOTLEADER;
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int zkr__seat_proclaim(zkr__seat_t *s, const char *value)
{
    zkr__guard_t g;
    if (!zkr__leader_id_ok(value))
        return ZKR_EINVAL;
    int rc = leading_guard(s, &g);
    return rc == ZKR_OK ? zkr__proclaim(&g, value) : rc;
}

int zkr__seat_guarded_write(zkr__seat_t *s, zkr_op_t *ops, size_t n)
{
    zkr__guard_t g;
    int rc = leading_guard(s, &g);
    return rc == ZKR_OK ? zkr__guard_run(&g, ops, n) : rc;
}

int zkr__seat_token(zkr__seat_t *s, int64_t *token)
{
    pthread_mutex_lock(&s->mu);
    int rc = zkr__seat_leading_locked(s) ? ZKR_OK : ZKR_ENOTLEADER;
    if (rc == ZKR_OK)
        *token = s->node.czxid;
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int zkr__seat_node_path(zkr__seat_t *s, char **path)
{
    *path = NULL;
    pthread_mutex_lock(&s->mu);
    int rc = zkr__seat_leading_locked(s) && s->node.path ? ZKR_OK : ZKR_ENOTLEADER;
    if (rc == ZKR_OK && !(*path = strdup(s->node.path)))
        rc = ZKR_ENOMEM;
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int zkr__seat_close(zkr__seat_t *s, int on_own_thread)
{
    pthread_mutex_lock(&s->mu);
    int rc = !s->started || s->closed ? ZKR_ESTATE : ZKR_OK;
    if (rc == ZKR_OK && (zkr__tell_in_call_locked(&s->tell) || on_own_thread))
        rc = ZKR_EDEADLK;
    if (rc != ZKR_OK) {
        pthread_mutex_unlock(&s->mu);
        return rc;
    }
    s->closed = s->closing = 1;
    pthread_cond_broadcast(&s->cond);
    /* The thread may be about to start an acquire: cancel until it ends. */
    while (!s->exited) {
        pthread_mutex_unlock(&s->mu);
        zkr__async_forget(s->c, s);
        pthread_mutex_lock(&s->mu);
        if (!s->exited)
            zkr__cond_wait_until(&s->cond, &s->mu, zkr__now_ms() + 20);
    }
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
    zkr__tell_finish(&s->tell);
    return ZKR_OK;
}

void zkr__seat_exit(zkr__seat_t *s)
{
    zkr__seat_give_up(s);
    pthread_mutex_lock(&s->mu);
    s->exited = 1;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->mu);
}

void zkr__seat_destroy(zkr__seat_t *s)
{
    zkr__client_release(s->c);
    pthread_cond_destroy(&s->cond);
    pthread_mutex_destroy(&s->mu);
    free(s->path);
    free(s->data);
}

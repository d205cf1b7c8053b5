/* The barriers' blocking calls (recipes/barrier_private.h): a waiter woken
 * by its watches and by every state change of the client, and requests
 * sent again after a lost connection until the call's deadline. */
#include "config.h"

#include <time.h>

#include "recipes/barrier_private.h"

#define CLOSED_POLL_MS 100 /* how often a waiter looks whether the client closes */
#define RESEND_PAUSE_MS 20 /* between a lost connection and the next send */

static void news_bump(zkr__bwait_t *w)
{
    pthread_mutex_lock(&w->mu);
    w->news++;
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->mu);
}

static void on_watch(zkr_client_t *c, void *arg, int type, const char *path)
{
    (void)c;
    (void)type;
    (void)path;
    news_bump(arg);
}

static void on_state(zkr_client_t *c, zkr_state_t state, void *ctx)
{
    (void)c;
    (void)state;
    news_bump(ctx);
}

int zkr__bwait_start(zkr__bwait_t *w, zkr_client_t *c)
{
    w->c = c;
    w->news = 0;
    w->sub = NULL;
    w->listening = 0;
    if (zkr__client_on_own_thread(c))
        return ZKR_EDEADLK;
    if (zkr_client_state(c) == ZKR_STATE_CLOSED)
        return ZKR_ECLOSED;
    if (zkr__sync_init(&w->mu, &w->cond) != 0)
        return ZKR_ESYSTEM;
    int rc = zkr__sub_add(c, on_watch, w, &w->sub);
    if (rc == ZKR_OK) {
        rc = zkr_client_add_listener(c, on_state, w);
        w->listening = rc == ZKR_OK;
    }
    if (rc != ZKR_OK) {
        zkr__bwait_stop(w);
        return rc == ZKR_ENOMEM ? rc : ZKR_ECLOSED;
    }
    return ZKR_OK;
}

void zkr__bwait_stop(zkr__bwait_t *w)
{
    if (w->listening)
        zkr_client_remove_listener(w->c, on_state, w);
    if (w->sub)
        zkr__sub_remove(w->c, w->sub);
    w->listening = 0;
    w->sub = NULL;
    zkr__sync_destroy(&w->mu, &w->cond);
}

uint64_t zkr__bwait_news(zkr__bwait_t *w)
{
    pthread_mutex_lock(&w->mu);
    uint64_t n = w->news;
    pthread_mutex_unlock(&w->mu);
    return n;
}

int zkr__bwait_until(zkr__bwait_t *w, uint64_t seen, int64_t deadline)
{
    int rc = ZKR_OK;
    pthread_mutex_lock(&w->mu);
    while (w->news == seen) {
        if (zkr_client_state(w->c) == ZKR_STATE_CLOSED) {
            rc = ZKR_ECLOSED;
            break;
        }
        if (zkr__remaining_ms(deadline) == 0) {
            rc = ZKR_ETIMEDOUT;
            break;
        }
        int64_t slice = zkr__now_ms() + CLOSED_POLL_MS;
        zkr__cond_wait_until(&w->cond, &w->mu, deadline < slice ? deadline : slice);
    }
    pthread_mutex_unlock(&w->mu);
    return rc;
}

int zkr__bsend(zkr_client_t *c, zkr__rq_t *r, int64_t session, int64_t deadline)
{
    for (;;) {
        int zrc = zkr__request(c, r, deadline);
        if (session != 0 && r->session != 0 && r->session != session)
            return ZSESSIONEXPIRED;
        /* ZOPERATIONTIMEOUT before the deadline is the C client's: the
         * connection timed out under the request */
        if ((zrc != ZCONNECTIONLOSS && zrc != ZOPERATIONTIMEOUT) || zkr__remaining_ms(deadline) == 0)
            return zrc;
        int64_t pause = zkr__remaining_ms(deadline);
        zkr__sleep_ms(pause > RESEND_PAUSE_MS ? RESEND_PAUSE_MS : pause);
    }
}

zkr__bdeadline_t zkr__bdeadline(int64_t timeout_ms)
{
    zkr__bdeadline_t d;
    d.wait = zkr__deadline(timeout_ms);
    d.send = timeout_ms == 0 ? zkr__deadline(ZKR_BARRIER_LOOK_MS) : d.wait;
    return d;
}

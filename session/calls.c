/* Callbacks of the program (listeners, hold listeners, subscriptions) run
 * on the client thread one at a time; this file marks which one runs, so
 * that removing one waits for its callback to end (unless called from
 * inside it), and tells whether the caller is the client thread.  c->mu
 * held throughout (see core_private.h). */
#include "config.h"

#include "session/core_private.h"

void zkr__callback_begin_locked(zkr_client_t *c, void *obj)
{
    c->calling = obj;
}

void zkr__callback_end_locked(zkr_client_t *c)
{
    c->calling = NULL;
    pthread_cond_broadcast(&c->cond);
}

int zkr__client_on_own_thread(const zkr_client_t *c)
{
    return c->thread_started && pthread_equal(pthread_self(), c->thread);
}

int zkr__callback_wait_locked(zkr_client_t *c, const void *obj)
{
    /* Callbacks run only on the client thread, one at a time: on that
     * thread, obj's callback running means we are inside it. */
    if (zkr__client_on_own_thread(c))
        return c->calling == obj;
    while (c->calling == obj)
        pthread_cond_wait(&c->cond, &c->mu);
    return 0;
}


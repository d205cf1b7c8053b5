/* Callbacks (the program's listeners, hold listeners, subscriptions,
 * completions, and the library's own) run on the client's callback thread
 * one at a time; this file marks which one runs, so that removing one
 * waits for its callback to end (unless called from inside it), and tells
 * whether the caller is one of the client's own threads.  c->mu held
 * throughout (see core_private.h). */
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

static int is_thread(const atomic_int *started, pthread_t t)
{
    return atomic_load_explicit(started, memory_order_acquire) && pthread_equal(pthread_self(), t);
}

int zkr__client_on_own_thread(const zkr_client_t *c)
{
    return is_thread(&c->cb_started, c->cb_thread) || is_thread(&c->thread_started, c->thread);
}

int zkr__callback_wait_relocking(zkr_client_t *c, const void *obj)
{
    /* Callbacks run only on the callback thread, one at a time: on that
     * thread, obj's callback running means we are inside it.  The client
     * thread never waits for a callback (it runs none, and never waits
     * for the program): it takes a running one as its own, to be freed by
     * the runner. */
    if (zkr__client_on_own_thread(c))
        return c->calling == obj;
    while (c->calling == obj)
        pthread_cond_wait(&c->cond, &c->mu);
    return 0;
}

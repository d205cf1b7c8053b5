/* The engine's asynchronous acquires, as the client sees them: starting
 * and cancelling one, the core's hooks (the client thread steps the ready
 * acquires and ends those past their deadline; a delivered state or a
 * release nearby makes them look again; close ends the rest), and the
 * program's dispatch (mode, event descriptor, dispatch call).  See aop.h
 * for the threads. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "engine/aop.h"

#define STEPS_PER_RUN 256

static _Thread_local const zkr_client_t *dispatching;

/* ---- the core's hooks ---- */

static int pending_locked(const zkr_client_t *c)
{
    return c->aready != NULL || (c->adispatch == ZKR_DISPATCH_THREAD && c->adone != NULL);
}

static int64_t run_locked(zkr_client_t *c)
{
    for (int n = 0; n < STEPS_PER_RUN && c->aready && !c->closing; n++) {
        zkr__aop_t *op = c->aready;
        c->aready = op->rnext;
        if (!c->aready)
            c->aready_tail = NULL;
        pthread_mutex_unlock(&c->mu);
        zkr__aop_step(c, op);
        pthread_mutex_lock(&c->mu);
        op->in_ready = 0;
        /* news that came while it stepped: again */
        if (op->nw.created || op->nw.listed || op->nw.counted || op->nw.wset || op->nw.parents ||
            (op->nw.look && !op->finished))
            zkr__aop_ready_locked(c, op);
        zkr__aop_maybe_free_locked(c, op);
    }
    int64_t now = zkr__now_ms();
    int64_t next = INT64_MAX;
    for (zkr__aop_t *op = c->aops; op; op = op->next) {
        if (op->finished || op->inflight > 0)
            continue;
        if (op->deadline <= now)
            zkr__aop_ready_locked(c, op);
        else if (op->deadline < next)
            next = op->deadline;
    }
    while (c->adispatch == ZKR_DISPATCH_THREAD && !c->closing && zkr__aop_deliver_one_locked(c))
        ;
    return c->aready ? now : next;
}

static void state_locked(zkr_client_t *c, zkr_state_t s)
{
    (void)s;
    for (zkr__aop_t *op = c->aops; op; op = op->next) {
        if (op->finished)
            continue;
        op->nw.look = 1; /* after RECONNECTED the watch may be gone: look again */
        zkr__aop_ready_locked(c, op);
    }
}

static void wake_path(zkr_client_t *c, const char *path)
{
    pthread_mutex_lock(&c->mu);
    for (zkr__aop_t *op = c->aops; op; op = op->next) {
        if (!op->finished && op->watching && strcmp(op->watching, path) == 0) {
            op->nw.look = 1;
            zkr__aop_ready_locked(c, op);
        }
    }
    pthread_mutex_unlock(&c->mu);
}

static int in_dispatch(const zkr_client_t *c)
{
    return dispatching == c;
}

static void close_all(zkr_client_t *c)
{
    /* The client thread is gone and every ZooKeeper completion has run:
     * only the program's threads (dispatch, cancel) may still look. */
    pthread_mutex_lock(&c->mu);
    c->aready = c->aready_tail = NULL;
    for (zkr__aop_t *op = c->aops; op; op = op->next) {
        op->in_ready = 0;
        if (op->finished)
            continue;
        op->finished = 1; /* ours now */
        pthread_mutex_unlock(&c->mu);
        /* The session is closed: its ephemeral nodes are gone. */
        zkr__track_remove(c, op->lease.track, NULL);
        zkr__track_remove(c, op->node.track, NULL);
        op->lease.track = op->node.track = NULL;
        pthread_mutex_lock(&c->mu);
        zkr__aop_finish_locked(c, op, ZKR_ECLOSED);
    }
    while (zkr__aop_deliver_one_locked(c))
        ;
    /* Wait for completions another thread's dispatch is running. */
    for (;;) {
        zkr__aop_t *op = c->aops;
        while (op && op->delivered)
            op = op->next;
        if (!op)
            break;
        pthread_cond_wait(&c->cond, &c->mu);
    }
    while (c->aops) {
        zkr__aop_t *op = c->aops;
        c->aops = op->next;
        zkr__aop_free(op);
    }
    c->aops_tail = NULL;
    pthread_mutex_unlock(&c->mu);
}

static void free_all(zkr_client_t *c)
{
    while (c->aops) {
        zkr__aop_t *op = c->aops;
        c->aops = op->next;
        zkr__aop_free(op);
    }
    if (c->afd >= 0)
        close(c->afd);
    c->afd = -1;
}

static const zkr__hooks_t hooks = {
    .run_locked = run_locked,
    .pending_locked = pending_locked,
    .state_locked = state_locked,
    .wake_path = wake_path,
    .close = close_all,
    .free = free_all,
    .in_dispatch = in_dispatch,
};

/* The core calls the hooks once the client has asynchronous work or a
 * dispatch mode, an event descriptor or a dispatch call. */
static void use(zkr_client_t *c)
{
    zkr__client_set_hooks(c, &hooks);
}

void zkr__async_forget(zkr_client_t *c, const void *owner)
{
    pthread_mutex_lock(&c->mu);
    for (zkr__aop_t *op = c->aops; op; op = op->next) {
        if (op->owner != owner)
            continue;
        op->owner = NULL;
        if (!op->taken)
            op->cancel = 1;
        if (!op->finished)
            zkr__aop_ready_locked(c, op);
    }
    pthread_mutex_unlock(&c->mu);
}

/* ---- starting, cancelling, dispatching ---- */

int zkr__async_start(const zkr__async_target_t *t, int64_t timeout_ms, const zkr__async_done_t *done,
                     uint64_t *id)
{
    zkr_client_t *c = t->c;
    use(c);
    zkr__aop_t *op = calloc(1, sizeof *op);
    if (!op)
        return ZKR_ENOMEM;
    op->c = c;
    op->sem = t->leases_dir != NULL;
    op->drv = t->drv;
    op->dir = strdup(t->dir);
    if (op->sem) {
        op->leases_dir = strdup(t->leases_dir);
        op->count_path = t->count_path ? strdup(t->count_path) : NULL;
        op->max = t->max;
    }
    if (!op->dir || (op->sem && (!op->leases_dir || (t->count_path && !op->count_path)))) {
        zkr__aop_free(op);
        return ZKR_ENOMEM;
    }
    op->hfn = t->hold.fn;
    op->hctx = t->hold.ctx;
    op->done = *done;
    op->owner = t->owner;
    op->deadline = zkr__deadline(timeout_ms);
    op->phase = ZKR__PH_START;
    pthread_mutex_lock(&c->mu);
    if (c->closing) {
        pthread_mutex_unlock(&c->mu);
        zkr__aop_free(op);
        return ZKR_ECLOSED;
    }
    op->id = ++c->next_aop_id;
    op->prev = c->aops_tail;
    if (c->aops_tail)
        c->aops_tail->next = op;
    else
        c->aops = op;
    c->aops_tail = op;
    zkr__aop_ready_locked(c, op); /* the client thread sends its create, in order */
    if (id)
        *id = op->id;
    pthread_mutex_unlock(&c->mu);
    return ZKR_OK;
}

int zkr_async_cancel(zkr_client_t *c, uint64_t id)
{
    if (!c || id == 0)
        return ZKR_EINVAL;
    pthread_mutex_lock(&c->mu);
    zkr__aop_t *op = zkr__aop_find_locked(c, id);
    int rc = (op && !op->taken) ? ZKR_OK : ZKR_ENONODE;
    if (rc == ZKR_OK) {
        op->cancel = 1;
        if (!op->finished)
            zkr__aop_ready_locked(c, op);
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

int zkr_client_set_dispatch(zkr_client_t *c, zkr_dispatch_mode_t mode)
{
    if (!c || (mode != ZKR_DISPATCH_LOOP && mode != ZKR_DISPATCH_THREAD))
        return ZKR_EINVAL;
    use(c);
    pthread_mutex_lock(&c->mu);
    int rc = c->closing ? ZKR_ECLOSED : ZKR_OK;
    if (rc == ZKR_OK) {
        c->adispatch = mode;
        pthread_cond_signal(&c->wake);
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

int zkr_client_fd(zkr_client_t *c)
{
    if (!c)
        return ZKR_EINVAL;
    use(c);
    pthread_mutex_lock(&c->mu);
    int rc = c->closing ? ZKR_ECLOSED : ZKR_OK;
    if (rc == ZKR_OK && c->afd < 0) {
        c->afd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (c->afd < 0)
            rc = ZKR_ESYSTEM;
        else if (c->adone)
            zkr__aop_raise_fd_locked(c);
    }
    if (rc == ZKR_OK)
        rc = c->afd;
    pthread_mutex_unlock(&c->mu);
    return rc;
}

int zkr_client_dispatch(zkr_client_t *c)
{
    if (!c)
        return ZKR_EINVAL;
    use(c);
    const zkr_client_t *outer = dispatching;
    dispatching = c;
    pthread_mutex_lock(&c->mu);
    int waiting = 0;
    for (zkr__aop_t *op = c->adone; op; op = op->dnext)
        waiting++;
    int ran = 0;
    while (ran < waiting && zkr__aop_deliver_one_locked(c))
        ran++;
    if (!c->adone)
        zkr__aop_lower_fd_locked(c);
    pthread_mutex_unlock(&c->mu);
    dispatching = outer;
    return ran;
}

/* The persistent node (include/zkr/pnode.h): its public calls, the
 * listener's deliveries on the callback thread (through a subscription,
 * which also brings the node's watch events), the state listener that
 * wakes its thread (recipes/pnode_work.c), and free. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "recipes/pnode_private.h"

#define POLL_MS 100 /* waiters look at the client's state this often */

/* Look again (a watch event, a state, new data). */
static void kick(zkr_pnode_t *n)
{
    pthread_mutex_lock(&n->mu);
    n->kicks++;
    pthread_cond_broadcast(&n->cond);
    pthread_mutex_unlock(&n->mu);
}

/* Callback thread: one queued event to the listener. */
static void deliver(zkr_pnode_t *n)
{
    pthread_mutex_lock(&n->emu);
    zkr__pevent_t *e = n->ehead;
    if (e && !(n->ehead = e->next))
        n->etail = NULL;
    zkr_pnode_fn fn = n->dead ? NULL : n->fn;
    void *ctx = n->ctx;
    if (e && fn) {
        n->in_call = 1;
        n->calling = pthread_self();
    }
    pthread_mutex_unlock(&n->emu);
    if (!e)
        return;
    if (fn) {
        zkr_pnode_event_t ev = {e->type, e->node_path, e->rc};
        fn(n, &ev, ctx);
        pthread_mutex_lock(&n->emu);
        n->in_call = 0;
        pthread_cond_broadcast(&n->econd);
        pthread_mutex_unlock(&n->emu);
    }
    free(e->node_path);
    free(e);
}

static void on_event(zkr_client_t *c, void *arg, int type, const char *path)
{
    (void)c;
    (void)path;
    zkr_pnode_t *n = arg;
    if (type == ZKR__PNODE_DELIVER)
        deliver(n);
    else
        kick(n);
}

static void on_state(zkr_client_t *c, zkr_state_t state, void *ctx)
{
    (void)c;
    (void)state;
    kick(ctx);
}

/* ---- the public calls --------------------------------------------------------------------------- */

void zkr_pnode_options_init_size(zkr_pnode_options_t *opt, size_t size)
{
    if (!opt || size < sizeof(size_t))
        return;
    zkr_pnode_options_t d;
    memset(&d, 0, sizeof d);
    d.size = size < sizeof d ? size : sizeof d;
    d.mode = ZKR_PNODE_EPHEMERAL;
    memcpy(opt, &d, d.size);
}

static int data_ok(const void *data, size_t data_len)
{
    return data_len <= ZKR_DATA_MAX && (data || data_len == 0);
}

/* A copy of data_len bytes, with a NUL byte after them (never NULL unless
 * out of memory: no data is zero bytes, as Curator sends). */
static char *data_dup(const void *data, size_t data_len)
{
    char *d = malloc(data_len + 1);
    if (d) {
        if (data_len)
            memcpy(d, data, data_len);
        d[data_len] = '\0';
    }
    return d;
}

static void pnode_destroy(zkr_pnode_t *n)
{
    if (n->sub)
        zkr__sub_remove(n->c, n->sub);
    while (n->ehead) {
        zkr__pevent_t *e = n->ehead;
        n->ehead = e->next;
        free(e->node_path);
        free(e);
    }
    zkr__sync_destroy(&n->mu, &n->cond);
    zkr__sync_destroy(&n->emu, &n->econd);
    if (n->c)
        zkr__client_release(n->c);
    free(n->path);
    free(n->dir);
    free(n->data);
    free(n->node);
    free(n->fixed);
    free(n);
}

int zkr_pnode_new(zkr_pnode_t **out, zkr_client_t *c, const char *path, const void *data, size_t data_len,
                  const zkr_pnode_options_t *opt)
{
    if (out)
        *out = NULL;
    zkr_pnode_options_t o;
    zkr_pnode_options_init(&o);
    if (opt && opt->size != sizeof o)
        return ZKR_EINVAL; /* (a later version reads an earlier struct as far as it goes) */
    if (opt)
        o = *opt;
    if (!out || !c || !zkr__path_valid(path) || !data_ok(data, data_len) || (int)o.mode < ZKR_PNODE_EPHEMERAL ||
        (int)o.mode > ZKR_PNODE_PERSISTENT_SEQUENTIAL)
        return ZKR_EINVAL;
    zkr_pnode_t *n = calloc(1, sizeof *n);
    if (!n)
        return ZKR_ENOMEM;
    if (zkr__sync_init(&n->mu, &n->cond) != 0) {
        free(n);
        return ZKR_ESYSTEM;
    }
    if (zkr__sync_init(&n->emu, &n->econd) != 0) {
        zkr__sync_destroy(&n->mu, &n->cond);
        free(n);
        return ZKR_ESYSTEM;
    }
    n->mode = o.mode;
    n->path = strdup(path);
    n->data = data_dup(data, data_len);
    n->data_len = data_len;
    size_t dl = (size_t)(zkr__path_basename(path) - path) - 1; /* "/a" -> "/" */
    if ((n->dir = malloc(dl ? dl + 1 : 2))) {
        memcpy(n->dir, dl ? path : "/", dl ? dl : 1);
        n->dir[dl ? dl : 1] = '\0';
    }
    int seq = o.mode == ZKR_PNODE_EPHEMERAL_SEQUENTIAL || o.mode == ZKR_PNODE_PERSISTENT_SEQUENTIAL;
    if (!seq)
        n->fixed = strdup(path);
    int rc = n->path && n->data && n->dir && (seq || n->fixed) ? ZKR_OK : ZKR_ENOMEM;
    if (rc == ZKR_OK && (rc = zkr__client_retain(c)) == ZKR_OK)
        n->c = c;
    if (rc == ZKR_OK)
        rc = zkr__sub_add(c, on_event, n, &n->sub);
    if (rc != ZKR_OK) {
        pnode_destroy(n);
        return rc;
    }
    *out = n;
    return ZKR_OK;
}

int zkr_pnode_set_listener(zkr_pnode_t *n, zkr_pnode_fn fn, void *ctx)
{
    if (!n)
        return ZKR_EINVAL;
    pthread_mutex_lock(&n->emu);
    n->fn = fn;
    n->ctx = ctx;
    pthread_mutex_unlock(&n->emu);
    return ZKR_OK;
}

int zkr_pnode_start(zkr_pnode_t *n)
{
    if (!n)
        return ZKR_EINVAL;
    pthread_mutex_lock(&n->mu);
    int rc = n->started ? ZKR_ESTATE : ZKR_OK;
    if (rc == ZKR_OK && zkr_client_state(n->c) == ZKR_STATE_CLOSED)
        rc = ZKR_ECLOSED;
    if (rc == ZKR_OK && (rc = zkr_client_add_listener(n->c, on_state, n)) == ZKR_OK)
        n->listening = 1;
    if (rc == ZKR_OK && pthread_create(&n->thread, NULL, zkr__pnode_main, n) != 0)
        rc = ZKR_ESYSTEM;
    if (rc == ZKR_OK)
        n->started = 1;
    int remove = rc != ZKR_OK && n->listening;
    if (remove)
        n->listening = 0;
    pthread_mutex_unlock(&n->mu);
    if (remove)
        zkr_client_remove_listener(n->c, on_state, n);
    return rc;
}

/* Wait (mu held) until done(n) says so: ZKR_OK, or ZKR_ECLOSED,
 * ZKR_ETIMEDOUT; done may return an error to end with. */
static int wait_until(zkr_pnode_t *n, int64_t deadline, int (*done)(zkr_pnode_t *n, uint64_t arg), uint64_t arg)
{
    for (;;) {
        int rc = done(n, arg);
        if (rc != 1)
            return rc;
        if (zkr_client_state(n->c) == ZKR_STATE_CLOSED)
            return ZKR_ECLOSED;
        if (zkr__remaining_ms(deadline) == 0)
            return ZKR_ETIMEDOUT;
        int64_t slice = zkr__now_ms() + POLL_MS;
        zkr__cond_wait_until(&n->cond, &n->mu, deadline < slice ? deadline : slice);
    }
}

/* 1: not yet; ZKR_OK: created; the refusal of a FAILED create. */
static int created_yet(zkr_pnode_t *n, uint64_t arg)
{
    (void)arg;
    return n->node ? ZKR_OK : n->failed_rc ? n->failed_rc : 1;
}

int zkr_pnode_wait_created(zkr_pnode_t *n, int64_t timeout_ms)
{
    if (!n)
        return ZKR_EINVAL;
    int64_t deadline = zkr__deadline(timeout_ms);
    pthread_mutex_lock(&n->mu);
    int rc = n->started ? wait_until(n, deadline, created_yet, 0) : ZKR_ESTATE;
    pthread_mutex_unlock(&n->mu);
    return rc;
}

int zkr_pnode_is_created(zkr_pnode_t *n)
{
    if (!n)
        return 0;
    pthread_mutex_lock(&n->mu);
    int created = n->node != NULL;
    pthread_mutex_unlock(&n->mu);
    return created;
}

/* 1: not yet; ZKR_OK: generation `gen` is on the server, or there is no
 * node (it will be made with it); ZKR_ECLOSED: there is none and the
 * client is closed (it never will be). */
static int written_yet(zkr_pnode_t *n, uint64_t gen)
{
    if (n->written_gen >= gen)
        return ZKR_OK;
    if (n->node)
        return 1;
    return zkr_client_state(n->c) == ZKR_STATE_CLOSED ? ZKR_ECLOSED : ZKR_OK;
}

int zkr__pnode_put_data(zkr_pnode_t *n, const void *data, size_t data_len, uint64_t *gen)
{
    if (!n || !data_ok(data, data_len))
        return ZKR_EINVAL;
    char *d = data_dup(data, data_len);
    if (!d)
        return ZKR_ENOMEM;
    pthread_mutex_lock(&n->mu);
    free(n->data);
    n->data = d;
    n->data_len = data_len;
    *gen = ++n->data_gen;
    n->kicks++;
    pthread_cond_broadcast(&n->cond);
    pthread_mutex_unlock(&n->mu);
    return ZKR_OK;
}

int zkr__pnode_wait_written(zkr_pnode_t *n, uint64_t gen, int64_t deadline)
{
    pthread_mutex_lock(&n->mu);
    int rc = n->started ? wait_until(n, deadline, written_yet, gen) : ZKR_OK;
    pthread_mutex_unlock(&n->mu);
    return rc;
}

int zkr_pnode_set_data(zkr_pnode_t *n, const void *data, size_t data_len, int64_t timeout_ms)
{
    int64_t deadline = zkr__deadline(timeout_ms);
    uint64_t gen;
    int rc = zkr__pnode_put_data(n, data, data_len, &gen);
    return rc == ZKR_OK ? zkr__pnode_wait_written(n, gen, deadline) : rc;
}

int zkr_pnode_data(zkr_pnode_t *n, char **data, size_t *data_len)
{
    if (data)
        *data = NULL;
    if (data_len)
        *data_len = 0;
    if (!n || !data || !data_len)
        return ZKR_EINVAL;
    pthread_mutex_lock(&n->mu);
    int rc = ZKR_OK;
    if (n->data_len > 0) {
        if ((*data = data_dup(n->data, n->data_len)))
            *data_len = n->data_len;
        else
            rc = ZKR_ENOMEM;
    }
    pthread_mutex_unlock(&n->mu);
    return rc;
}

int zkr_pnode_node_path(zkr_pnode_t *n, char **path)
{
    if (path)
        *path = NULL;
    if (!n || !path)
        return ZKR_EINVAL;
    pthread_mutex_lock(&n->mu);
    int rc = !n->node ? ZKR_ENONODE : (*path = strdup(n->node)) ? ZKR_OK : ZKR_ENOMEM;
    pthread_mutex_unlock(&n->mu);
    return rc;
}

void zkr_pnode_free(zkr_pnode_t *n)
{
    if (!n)
        return;
    pthread_mutex_lock(&n->emu);
    int inside = n->in_call && pthread_equal(n->calling, pthread_self());
    if (!inside)
        n->dead = 1; /* nothing more is told */
    pthread_mutex_unlock(&n->emu);
    if (inside) {
        zkr__log(n->c, ZKR_LOG_ERROR, "pnode %s: zkr_pnode_free from its own listener: not freed", n->path);
        return;
    }
    int64_t deadline = zkr__deadline(ZKR_RELEASE_WAIT_MS);
    pthread_mutex_lock(&n->mu);
    n->stop = 1;
    int started = n->started;
    pthread_cond_broadcast(&n->cond);
    pthread_mutex_unlock(&n->mu);
    if (n->listening)
        zkr_client_remove_listener(n->c, on_state, n);
    /* (a delivery in progress ends before this returns; the thread may
     * still name the subscription in a request: its watch is ignored) */
    zkr__sub_remove(n->c, n->sub);
    if (started) {
        pthread_join(n->thread, NULL); /* within one request's wait */
        zkr__pnode_delete_own(n, deadline);
    }
    n->sub = NULL; /* (removed above; the thread is gone) */
    pnode_destroy(n);
}

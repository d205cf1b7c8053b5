/* The client: open and close, its two threads, the lifetime rules (users,
 * objects, callbacks), and the public queries.  The rooms it drives:
 * session.c (handles, states), listeners.c, tracks.c (hold states),
 * subs.c (subscriptions), deletes.c.
 *
 * Threads (libuv's rule: the loop never runs the program's code inside
 * its own work; Curator's: state listeners run on their own executor):
 *  - ZooKeeper's completion thread runs our watchers and completions: they
 *    only record and signal.
 *  - The client thread (client_main) is the executor.  It does everything
 *    slow, and only that: session events, applying each new state to the
 *    holds and acquires at once, the LOST timer and the rebuild, closing
 *    retired handles, background deletes, self watches, and every step,
 *    deadline and end of every acquire.  It never runs a callback, never
 *    holds c->mu while calling out and never makes a synchronous
 *    ZooKeeper call.
 *  - The callback thread (callback_main) runs every callback, in order:
 *    state listeners (then the hold listeners of that state), hold
 *    listeners, subscriptions, completions of the library's own acquires
 *    and, in ZKR_DISPATCH_THREAD mode, the program's.  A callback may call
 *    anything (a blocking acquire included): it delays only the callbacks
 *    after it, never a state, a timer or another hold's state.
 *  - Callers block in their own threads, on their own records. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session/core_private.h"


/* ---- users, objects ----------------------------------------------------------- */

int zkr__client_enter(zkr_client_t *c)
{
    pthread_mutex_lock(&c->mu);
    if (c->closing) {
        pthread_mutex_unlock(&c->mu);
        return ZKR_ECLOSED;
    }
    c->users++;
    pthread_mutex_unlock(&c->mu);
    return ZKR_OK;
}

void zkr__client_leave(zkr_client_t *c)
{
    pthread_mutex_lock(&c->mu);
    if (--c->users == 0 && c->closing)
        pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->mu);
}

static void client_free(zkr_client_t *c);

int zkr__client_retain(zkr_client_t *c)
{
    pthread_mutex_lock(&c->mu);
    int rc = c->closing ? ZKR_ECLOSED : ZKR_OK;
    if (rc == ZKR_OK)
        c->objects++;
    pthread_mutex_unlock(&c->mu);
    return rc;
}

void zkr__client_release(zkr_client_t *c)
{
    pthread_mutex_lock(&c->mu);
    int free_now = --c->objects == 0 && c->closed;
    pthread_mutex_unlock(&c->mu);
    if (free_now)
        client_free(c);
}

/* ---- waiting for the connection --------------------------------------------------- */

static int connected_ok(const zkr_client_t *c, int usable_only)
{
    if (!c->sm.connected)
        return 0;
    return usable_only ? zkr__is_usable_state(c->sm.state) : zkr__is_connected_state(c->sm.state);
}

static int wait_connected_locked(zkr_client_t *c, int64_t deadline, int usable_only)
{
    for (;;) {
        if (c->closing)
            return ZKR_ECLOSED;
        if (c->auth_failed)
            return ZKR_ENOAUTH;
        if (connected_ok(c, usable_only))
            return ZKR_OK;
        if (zkr__cond_wait_until(&c->cond, &c->mu, deadline) == ETIMEDOUT) {
            if (connected_ok(c, usable_only) && !c->closing)
                return ZKR_OK;
            return c->closing ? ZKR_ECLOSED : ZKR_ETIMEDOUT;
        }
    }
}

int zkr__client_wait_usable(zkr_client_t *c, int64_t deadline)
{
    pthread_mutex_lock(&c->mu);
    int rc = wait_connected_locked(c, deadline, 1);
    pthread_mutex_unlock(&c->mu);
    return rc;
}

int zkr__client_wait_session(zkr_client_t *c, int64_t session, int64_t deadline)
{
    pthread_mutex_lock(&c->mu);
    int rc;
    for (;;) {
        if (c->closing) {
            rc = ZKR_ECLOSED;
            break;
        }
        if (c->sm.state == ZKR_STATE_LOST || c->auth_failed ||
            (c->have_session && c->session_id != session)) {
            rc = ZKR_ESESSIONLOST;
            break;
        }
        if (connected_ok(c, 1)) {
            rc = ZKR_OK;
            break;
        }
        if (zkr__cond_wait_until(&c->cond, &c->mu, deadline) == ETIMEDOUT) {
            rc = ZKR_ETIMEDOUT;
            if (!c->closing && connected_ok(c, 1) && c->session_id == session)
                rc = ZKR_OK;
            break;
        }
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

int zkr_client_wait_connected(zkr_client_t *c, int64_t timeout_ms)
{
    if (!c)
        return ZKR_EINVAL;
    int64_t deadline = zkr__deadline(timeout_ms);
    int rc = zkr__client_enter(c);
    if (rc != ZKR_OK)
        return rc;
    pthread_mutex_lock(&c->mu);
    rc = wait_connected_locked(c, deadline, 0);
    pthread_mutex_unlock(&c->mu);
    zkr__client_leave(c);
    return rc;
}

/* ---- the client thread ---------------------------------------------------------------- */

static int work_pending_locked(const zkr_client_t *c)
{
    return c->raw_n > 0 || c->raw_overflow || c->app_n > 0 || (c->hooks && c->hooks->pending_locked(c));
}

/* Apply each new state to the holds (their states change now, whoever is
 * told later) and to the acquires (they look again).  c->mu held. */
static void apply_states_locked(zkr_client_t *c)
{
    zkr_state_t s;
    while (zkr__session_next_state_locked(c, &s)) {
        zkr__tracks_apply_locked(c, s);
        if (c->hooks)
            c->hooks->state_locked(c, s);
        zkr__session_tell_locked(c, s); /* the listeners hear of it after */
    }
}

static void *client_main(void *arg)
{
    zkr_client_t *c = arg;
    pthread_mutex_lock(&c->mu);
    while (!c->closing) {
        c->woken = 0; /* what comes from here on is seen below */
        zkr__session_process_locked(c);
        int64_t next = zkr__session_tick_relocking(c);
        if (c->closing)
            break;
        zkr__session_process_locked(c); /* what came while it rebuilt */
        apply_states_locked(c);
        zkr__session_close_retired_relocking(c);
        int64_t d = zkr__deletes_run_locked(c);
        if (d < next)
            next = d;
        d = zkr__tracks_watch_locked(c);
        if (d < next)
            next = d;
        if (c->hooks && (d = c->hooks->run_relocking(c)) < next)
            next = d;
        /* A wake that came while c->mu was dropped in this round (a step)
         * may have changed a timer read above: another round. */
        if (!c->woken && !work_pending_locked(c) && !c->closing)
            zkr__cond_wait_until(&c->wake, &c->mu, next);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

static int callbacks_pending_locked(const zkr_client_t *c)
{
    return c->rep_n > 0 || c->tracks_dirty || c->sev_head || (c->hooks && c->hooks->deliver_pending_locked(c));
}

static void *callback_main(void *arg)
{
    zkr_client_t *c = arg;
    pthread_mutex_lock(&c->mu);
    while (!c->closing) {
        c->cb_woken = 0;
        /* One state at a time: its listeners, then the hold listeners told
         * what they have not been told, before the next state. */
        if (zkr__listeners_deliver_next_relocking(c)) {
            zkr__tracks_notify_relocking(c);
            continue;
        }
        if (zkr__tracks_notify_relocking(c) || zkr__subs_run_next_relocking(c))
            continue;
        if (c->hooks && c->hooks->deliver_relocking(c))
            continue;
        if (!c->cb_woken && !callbacks_pending_locked(c) && !c->closing)
            pthread_cond_wait(&c->cb_wake, &c->mu);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

/* ---- open / close ---------------------------------------------------------------------- */

static void client_free(zkr_client_t *c)
{
    if (c->hooks)
        c->hooks->free(c);
    zkr__subs_free(c);
    zkr__tracks_free(c);
    zkr__deletes_free(c);
    zkr__listeners_free(c);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cond);
    pthread_cond_destroy(&c->wake);
    pthread_cond_destroy(&c->cb_wake);
    zkr__acl_free(&c->acl);
    free(c->hosts);
    free(c->auth_scheme);
    free(c->auth_data);
    free(c);
}

/* Everything but the handle and the thread; c->hosts etc. copied. */
static int client_alloc(zkr_client_t **out, const char *hosts, const zkr_client_options_t *opt)
{
    zkr_client_t *c = calloc(1, sizeof *c);
    if (!c)
        return ZKR_ENOMEM;
    int sync_ok = pthread_mutex_init(&c->mu, NULL) == 0;
    sync_ok = zkr__cond_init(&c->cond) == 0 && sync_ok;
    sync_ok = zkr__cond_init(&c->wake) == 0 && sync_ok;
    sync_ok = zkr__cond_init(&c->cb_wake) == 0 && sync_ok;
    if (!sync_ok) {
        /* Destroying what was never initialised is undefined: leak the
         * few bytes of a failed init rather than risk it. */
        free(c);
        return ZKR_ESYSTEM;
    }
    size_t hl = strlen(hosts) + (opt->chroot ? strlen(opt->chroot) : 0) + 1;
    c->hosts = malloc(hl);
    if (c->hosts)
        snprintf(c->hosts, hl, "%s%s", hosts, opt->chroot ? opt->chroot : "");
    if (opt->auth_scheme) {
        c->auth_scheme = strdup(opt->auth_scheme);
        c->auth_data = malloc(opt->auth_data_len ? (size_t)opt->auth_data_len : 1);
        if (c->auth_data)
            memcpy(c->auth_data, opt->auth_data, (size_t)opt->auth_data_len);
        c->auth_data_len = opt->auth_data_len;
    }
    if (!c->hosts || (opt->auth_scheme && (!c->auth_scheme || !c->auth_data)) ||
        zkr__acl_copy(&c->acl, opt) != ZKR_OK) {
        client_free(c);
        return ZKR_ENOMEM;
    }
    c->session_timeout_req = opt->session_timeout_ms ? (int)opt->session_timeout_ms : 15000; /* checked */
    c->log_fn = opt->log_fn;
    c->log_ctx = opt->log_ctx;
    c->log_level = opt->log_level;
    c->zk_log_level = opt->zk_log_level;
    c->allow_read_only = opt->allow_read_only != 0;
    c->sm.state = ZKR_STATE_LATENT;
    c->lost_deadline = INT64_MAX;
    c->track_timer_at = INT64_MAX;
    c->records_due_at = INT64_MAX;
    c->event_fd = -1;
    *out = c;
    return ZKR_OK;
}

/* After the first connection: the server's answer to the credentials, and
 * the chroot's presence (a missing one would fail every acquire). */
static int confirm_open(zkr_client_t *c, int64_t deadline, int has_chroot)
{
    pthread_mutex_lock(&c->mu);
    while (c->cur->auth_rc == 1 && !c->auth_failed &&
           zkr__cond_wait_until(&c->cond, &c->mu, deadline) != ETIMEDOUT)
        ;
    int arc = c->cur->auth_rc;
    int failed = c->auth_failed;
    pthread_mutex_unlock(&c->mu);
    if (failed || (arc != ZOK && arc != 1))
        return ZKR_ENOAUTH;
    if (arc == 1)
        return ZKR_ETIMEDOUT;
    if (!has_chroot)
        return ZKR_OK;
    zkr__zh_t *h;
    int rc = zkr__client_get_handle(c, &h);
    if (rc != ZKR_OK)
        return rc;
    struct Stat st;
    int zrc = zkr__zh_exists_until(h, "/", deadline, &st);
    zkr__client_put_handle(c, h);
    return zrc == ZOPERATIONTIMEOUT ? ZKR_ETIMEDOUT : zkr__zk_error(zrc);
}

int zkr_client_open(zkr_client_t **out, const char *hosts, const zkr_client_options_t *opt_in)
{
    if (out)
        *out = NULL;
    if (!out || !hosts || !zkr__hosts_valid(hosts))
        return ZKR_EINVAL;
    zkr_client_options_t opt;
    int rc = zkr__options_take(&opt, opt_in);
    if (rc == ZKR_OK)
        rc = zkr__options_validate(&opt);
    if (rc != ZKR_OK)
        return rc;
    zkr_client_t *c;
    if ((rc = client_alloc(&c, hosts, &opt)) != ZKR_OK)
        return rc;

    c->gen = c->gen_seq = 1;
    if ((rc = zkr__handle_new(c, c->gen, &c->cur)) != ZKR_OK) {
        client_free(c);
        return rc;
    }
    if (pthread_create(&c->cb_thread, NULL, callback_main, c) != 0) {
        zkr__handle_close(c->cur);
        client_free(c);
        return ZKR_ESYSTEM;
    }
    atomic_store_explicit(&c->cb_started, 1, memory_order_release);
    if (pthread_create(&c->thread, NULL, client_main, c) != 0) {
        pthread_mutex_lock(&c->mu);
        c->closing = 1;
        zkr__wake_callbacks_locked(c);
        pthread_mutex_unlock(&c->mu);
        pthread_join(c->cb_thread, NULL);
        atomic_store(&c->cb_started, 0);
        zkr__handle_close(c->cur);
        client_free(c);
        return ZKR_ESYSTEM;
    }
    atomic_store_explicit(&c->thread_started, 1, memory_order_release);
    if (opt.connect_timeout_ms >= 0) {
        int64_t deadline = zkr__deadline(opt.connect_timeout_ms);
        rc = zkr_client_wait_connected(c, opt.connect_timeout_ms);
        if (rc == ZKR_OK)
            rc = confirm_open(c, deadline, opt.chroot && opt.chroot[0]);
        if (rc != ZKR_OK) {
            zkr_client_close(c);
            return rc;
        }
    }
    *out = c;
    return ZKR_OK;
}

/* The client whose zkr_client_with_handle function this thread runs. */
static _Thread_local zkr_client_t *in_handle_fn;

int zkr_client_with_handle(zkr_client_t *c, zkr_handle_fn fn, void *ctx)
{
    if (!c || !fn)
        return ZKR_EINVAL;
    int rc = zkr__client_enter(c);
    if (rc != ZKR_OK)
        return rc;
    zkr__zh_t *h;
    if ((rc = zkr__client_get_handle(c, &h)) == ZKR_OK) {
        zkr_client_t *outer = in_handle_fn;
        in_handle_fn = c;
        rc = fn(zkr__zh(h), zkr__zh_session(c, h), ctx);
        in_handle_fn = outer;
        zkr__client_put_handle(c, h);
    }
    zkr__client_leave(c);
    return rc;
}

/* 1 if the calling thread runs a completion of the layer above (its
 * dispatch): close would wait for that very call. */
static int in_dispatch(zkr_client_t *c)
{
    pthread_mutex_lock(&c->mu);
    const zkr__hooks_t *hooks = c->hooks;
    pthread_mutex_unlock(&c->mu);
    return hooks && hooks->in_dispatch(c);
}

void zkr__client_set_hooks(zkr_client_t *c, const zkr__hooks_t *hooks)
{
    /* every acquire asks: once set, no trip through the client mutex */
    if (atomic_load_explicit(&c->hooks_set, memory_order_acquire))
        return;
    pthread_mutex_lock(&c->mu);
    if (!c->hooks)
        c->hooks = hooks;
    atomic_store_explicit(&c->hooks_set, 1, memory_order_release);
    pthread_mutex_unlock(&c->mu);
}

int zkr_client_close(zkr_client_t *c)
{
    if (!c)
        return ZKR_OK;
    /* A listener, hold listener or revocation function of this client runs
     * on its thread: closing from there would join that very thread; a
     * zkr_client_with_handle function is a user close would wait for. */
    if (zkr__client_on_own_thread(c) || in_handle_fn == c ||
        in_dispatch(c))
        return ZKR_EDEADLK;
    pthread_mutex_lock(&c->mu);
    if (c->closing) {
        pthread_mutex_unlock(&c->mu);
        return ZKR_ECLOSED;
    }
    c->closing = 1;
    if (c->hooks)
        c->hooks->closing_locked(c); /* blocked callers leave */
    pthread_cond_broadcast(&c->cond);
    zkr__wake_locked(c);
    zkr__wake_callbacks_locked(c);
    while (c->users > 0)
        pthread_cond_wait(&c->cond, &c->mu);
    pthread_mutex_unlock(&c->mu);

    /* The callback thread ends after the callback it runs (a callback
     * inside a blocking call has left it: it was a user); no callback
     * starts once closing is set.  Its id is forgotten once joined: a
     * later thread given the same id is not taken for it. */
    if (atomic_load(&c->cb_started)) {
        pthread_join(c->cb_thread, NULL);
        atomic_store(&c->cb_started, 0);
    }
    if (atomic_load(&c->thread_started)) {
        pthread_join(c->thread, NULL);
        atomic_store(&c->thread_started, 0);
    }
    /* The client thread has stopped: nothing adds closers any more. */
    zkr__session_join_closers(c);

    /* Every path that uses a handle is inside the client (users), so the
     * current handle's other references are gone too; wait to be sure. */
    pthread_mutex_lock(&c->mu);
    while (c->cur && c->cur->refs > 1)
        pthread_cond_wait(&c->cond, &c->mu);
    zkr__zh_t *cur = c->cur;
    c->cur = NULL;
    zkr__zh_t *ret = c->retired;
    c->retired = NULL;
    pthread_mutex_unlock(&c->mu);
    /* Closing the session deletes every ephemeral node it owns at once;
     * completions still pending run (with ZCLOSING) before it returns. */
    if (cur)
        zkr__handle_close(cur);
    while (ret) {
        zkr__zh_t *n = ret->next_retired;
        zkr__handle_close(ret);
        ret = n;
    }

    /* Every ZooKeeper completion has run: the layer above ends what it
     * still has in flight (the asynchronous acquires). */
    pthread_mutex_lock(&c->mu);
    const zkr__hooks_t *hooks = c->hooks;
    pthread_mutex_unlock(&c->mu);
    if (hooks)
        hooks->close(c);

    pthread_mutex_lock(&c->mu);
    c->closed = 1;
    int free_now = c->objects == 0;
    pthread_mutex_unlock(&c->mu);
    if (free_now)
        client_free(c); /* else the last object freed frees it */
    return ZKR_OK;
}

/* ---- queries ---------------------------------------------------------------------- */

zkr_state_t zkr_client_state(zkr_client_t *c)
{
    if (!c)
        return ZKR_STATE_LATENT;
    pthread_mutex_lock(&c->mu);
    zkr_state_t s = c->closing ? ZKR_STATE_CLOSED : c->sm.state;
    pthread_mutex_unlock(&c->mu);
    return s;
}

int zkr_client_is_connected(zkr_client_t *c)
{
    if (!c)
        return 0;
    pthread_mutex_lock(&c->mu);
    int ok = zkr__usable_locked(c);
    pthread_mutex_unlock(&c->mu);
    return ok;
}

int zkr_client_session(zkr_client_t *c, int64_t *id, char passwd[16])
{
    if (!c || !id)
        return ZKR_EINVAL;
    pthread_mutex_lock(&c->mu);
    int rc = c->have_session ? ZKR_OK : ZKR_ECONNLOSS;
    if (rc == ZKR_OK) {
        *id = c->session_id;
        if (passwd)
            memcpy(passwd, c->passwd, 16);
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

int zkr_client_session_timeout(zkr_client_t *c, int64_t *timeout_ms)
{
    if (!c || !timeout_ms)
        return ZKR_EINVAL;
    pthread_mutex_lock(&c->mu);
    int rc = c->have_session ? ZKR_OK : ZKR_ECONNLOSS;
    if (rc == ZKR_OK)
        *timeout_ms = c->session_timeout;
    pthread_mutex_unlock(&c->mu);
    return rc;
}

/* ---- shared helper: parents as containers --------------------------------------------- */

static int create_parent(void *ctx, const char *p, const struct ACL_vector *acl, int mode)
{
    zhandle_t *zh = ctx;
    int zrc = zkr__zh_answer(zh, zoo_create(zh, p, "", 0, acl, mode, NULL, 0));
    /* a create under a parent that denies us CREATE is refused before the
     * server sees the node is there: an ancestor that is there is passed
     * (as session/requests.c does, and Curator's ZKPaths.mkdirs) */
    if (zrc == ZNOAUTH && zkr__zh_answer(zh, zoo_exists(zh, p, 0, NULL)) == ZOK)
        zrc = ZOK;
    return zrc == ZOK || zrc == ZNODEEXISTS ? ZKR_OK : zkr__zk_error(zrc);
}

int zkr__ensure_path(zkr_client_t *c, zhandle_t *zh, const char *path)
{
    return zkr__parents_each(c, path, create_parent, zh);
}

/* The session client: owns the ZooKeeper handle, turns session events into
 * Curator's connection states, rebuilds the session after it is lost, and
 * runs listeners, background deletes and posted work on a thread of its own.
 *
 * Threads:
 *  - ZooKeeper's completion thread runs session_watcher and the waiters'
 *    watch function: they only record and signal under c->mu.
 *  - The client thread (client_main) does everything slow: the state
 *    machine, the LOST timer, handle rebuild and close, background deletes,
 *    listeners and posted tasks.  It never holds c->mu while calling out.
 *  - Callers block in their own threads. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recipes/internal.h"
#include "zkr/client.h"

#define RAW_MAX 64
#define REPORT_MAX 64
#define HOSTS_MAX 4096
#define DELETE_RETRY_MIN_MS 100
#define DELETE_RETRY_MAX_MS 5000
#define DELETE_MAX_FAILURES 20

struct zkr__zh {
    zhandle_t *zh;
    zkr_client_t *c;
    unsigned gen;
    int refs;            /* users + 1 while it is the current handle */
    int64_t session_id;  /* last session seen connected on it */
    struct zkr__zh *next_retired;
};

typedef struct listener {
    zkr_state_fn fn;
    void *ctx;
    int internal;
    int removed;
    int calling;
    struct listener *next;
} listener_t;

typedef struct sub {
    uint64_t id;
    zkr__sub_fn fn;
    void *arg;
    int calling;
    int orphan;
    struct sub *next;
} sub_t;

typedef struct sub_event {
    uint64_t id;
    int type;
    char *path;
    struct sub_event *next;
} sub_event_t;

struct zkr__track {
    char *path;
    int64_t session;
    zkr_hold_state_t state;
    zkr_hold_fn fn;
    void *ctx;
    unsigned pass;
    int calling;
    int orphan;
    struct zkr__track *next;
};

typedef struct closer {
    pthread_t thread;
    struct closer *next;
} closer_t;

typedef struct task {
    void (*fn)(void *);
    void *arg;
    struct task *next;
} task_t;

typedef struct pending_delete {
    uint64_t id;
    char *path;
    char *prefix; /* if set: delete every child of path starting with it */
    int64_t session;
    int inflight;
    int64_t retry_at;
    int64_t backoff;
    int failures;
    struct pending_delete *next;
} pending_delete_t;

typedef struct delete_op {
    zkr_client_t *c;
    const struct zkr__zh *h; /* compared, never followed */
    uint64_t id;
} delete_op_t;

struct zkr_client {
    pthread_mutex_t mu;
    pthread_cond_t cond;  /* state reached, users drained, listener done */
    pthread_cond_t wake;  /* the client thread has work */
    pthread_t thread;
    int thread_started;

    char *hosts;
    int session_timeout_req;
    int allow_read_only;
    char *auth_scheme;
    char *auth_data;
    int auth_data_len;

    zkr__zh_t *cur;
    zkr__zh_t *retired;
    closer_t *closers; /* threads closing retired handles */
    unsigned gen;

    int raw[RAW_MAX];
    int raw_n;
    int raw_overflow;

    zkr_state_t state;
    int ever_connected;
    int connected;
    int have_session;
    int64_t session_id;
    char passwd[16];
    int session_timeout;
    int64_t lost_deadline;
    int need_rebuild;
    int auth_failed;

    zkr_state_t reports[REPORT_MAX];
    int rep_head, rep_n;

    listener_t *listeners;
    pthread_t listener_thread; /* valid while a listener is being called */
    int in_listener;

    task_t *task_head, *task_tail;
    pending_delete_t *deletes;

    zkr__waiter_t *waiters;
    uint64_t next_id;

    sub_t *subs;
    sub_event_t *sev_head, *sev_tail;

    struct zkr__track *tracks;
    unsigned track_pass;
    pthread_t track_thread;
    int in_track;
    pthread_t sub_thread;
    int in_sub;

    int closing;
    int users;
};

/* ---------------------------------------------------------------------- */

const char *zkr_state_name(zkr_state_t s)
{
    switch (s) {
    case ZKR_STATE_LATENT: return "LATENT";
    case ZKR_STATE_CONNECTED: return "CONNECTED";
    case ZKR_STATE_SUSPENDED: return "SUSPENDED";
    case ZKR_STATE_RECONNECTED: return "RECONNECTED";
    case ZKR_STATE_LOST: return "LOST";
    case ZKR_STATE_READ_ONLY: return "READ_ONLY";
    case ZKR_STATE_CLOSED: return "CLOSED";
    }
    return "UNKNOWN";
}

void zkr_client_options_init(zkr_client_options_t *opt)
{
    if (!opt)
        return;
    memset(opt, 0, sizeof *opt);
    opt->session_timeout_ms = 15000;
    opt->connect_timeout_ms = 15000;
    opt->zk_log_level = -1;
}

static int is_usable_state(zkr_state_t s)
{
    return s == ZKR_STATE_CONNECTED || s == ZKR_STATE_RECONNECTED;
}

static int is_connected_state(zkr_state_t s)
{
    return is_usable_state(s) || s == ZKR_STATE_READ_ONLY;
}

/* ---- waiters ------------------------------------------------------------ */

static void wake_all_waiters_locked(zkr_client_t *c, unsigned bits)
{
    for (zkr__waiter_t *w = c->waiters; w; w = w->next) {
        w->events |= bits;
        pthread_cond_signal(&w->cond);
    }
}

int zkr__waiter_init(zkr_client_t *c, zkr__waiter_t *w)
{
    if (zkr__cond_init(&w->cond) != 0)
        return ZKR_ESYSTEM;
    pthread_mutex_lock(&c->mu);
    w->id = ++c->next_id;
    w->events = 0;
    w->next = c->waiters;
    c->waiters = w;
    pthread_mutex_unlock(&c->mu);
    return ZKR_OK;
}

void zkr__waiter_destroy(zkr_client_t *c, zkr__waiter_t *w)
{
    pthread_mutex_lock(&c->mu);
    for (zkr__waiter_t **p = &c->waiters; *p; p = &(*p)->next) {
        if (*p == w) {
            *p = w->next;
            break;
        }
    }
    pthread_mutex_unlock(&c->mu);
    pthread_cond_destroy(&w->cond);
}

static void waiter_watch_fn(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)state;
    (void)path;
    /* Session events reach every registered watcher; the client's own
     * session watcher already wakes all waiters for those. */
    if (type == ZOO_SESSION_EVENT)
        return;
    const zkr__zh_t *h = zoo_get_context(zh);
    if (!h)
        return;
    zkr_client_t *c = h->c;
    uint64_t id = (uint64_t)(uintptr_t)ctx;
    pthread_mutex_lock(&c->mu);
    for (zkr__waiter_t *w = c->waiters; w; w = w->next) {
        if (w->id == id) {
            w->events |= ZKR__WAKE_WATCH;
            pthread_cond_signal(&w->cond);
            break;
        }
    }
    pthread_mutex_unlock(&c->mu);
}

watcher_fn zkr__waiter_watcher(void)
{
    return waiter_watch_fn;
}

void *zkr__waiter_ctx(const zkr__waiter_t *w)
{
    return (void *)(uintptr_t)w->id;
}

unsigned zkr__waiter_wait_locked(zkr_client_t *c, zkr__waiter_t *w, int64_t deadline)
{
    while (w->events == 0 && !c->closing) {
        if (zkr__cond_wait_until(&w->cond, &c->mu, deadline) == ETIMEDOUT)
            break;
    }
    unsigned ev = w->events;
    if (c->closing)
        ev |= ZKR__WAKE_CLOSE;
    w->events = 0;
    return ev;
}

void zkr__waiter_wake(zkr_client_t *c, zkr__waiter_t *w)
{
    pthread_mutex_lock(&c->mu);
    w->events |= ZKR__WAKE_OTHER;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&c->mu);
}

/* ---- subscriptions --------------------------------------------------------- */

static void sub_watch_fn(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)state;
    if (type == ZOO_SESSION_EVENT)
        return;
    const zkr__zh_t *h = zoo_get_context(zh);
    if (!h)
        return;
    zkr_client_t *c = h->c;
    sub_event_t *e = calloc(1, sizeof *e);
    char *p = path ? strdup(path) : NULL;
    if (!e || (path && !p)) {
        free(e);
        free(p);
        return;
    }
    e->id = (uint64_t)(uintptr_t)ctx;
    e->type = type;
    e->path = p;
    pthread_mutex_lock(&c->mu);
    if (c->closing) {
        pthread_mutex_unlock(&c->mu);
        free(e->path);
        free(e);
        return;
    }
    if (c->sev_tail)
        c->sev_tail->next = e;
    else
        c->sev_head = e;
    c->sev_tail = e;
    pthread_cond_signal(&c->wake);
    pthread_mutex_unlock(&c->mu);
}

watcher_fn zkr__sub_watcher(void)
{
    return sub_watch_fn;
}

int zkr__sub_add(zkr_client_t *c, zkr__sub_fn fn, void *arg, void **ctx)
{
    sub_t *s = calloc(1, sizeof *s);
    if (!s)
        return ZKR_ENOMEM;
    s->fn = fn;
    s->arg = arg;
    pthread_mutex_lock(&c->mu);
    s->id = ++c->next_id;
    s->next = c->subs;
    c->subs = s;
    pthread_mutex_unlock(&c->mu);
    *ctx = (void *)(uintptr_t)s->id;
    return ZKR_OK;
}

void zkr__sub_remove(zkr_client_t *c, void *ctx)
{
    uint64_t id = (uint64_t)(uintptr_t)ctx;
    pthread_mutex_lock(&c->mu);
    sub_t *s = c->subs;
    while (s && s->id != id)
        s = s->next;
    if (s) {
        s->fn = NULL; /* no new calls */
        int self = c->in_sub && pthread_equal(pthread_self(), c->sub_thread);
        if (s->calling && self) {
            s->orphan = 1; /* freed by the runner after this call */
        } else {
            while (s->calling)
                pthread_cond_wait(&c->cond, &c->mu);
        }
        for (sub_t **q = &c->subs; *q; q = &(*q)->next) {
            if (*q == s) {
                *q = s->next;
                break;
            }
        }
        if (!s->orphan)
            free(s);
    }
    pthread_mutex_unlock(&c->mu);
}

/* Run one queued subscription event.  c->mu held; dropped around the call. */
static void run_sub_event_locked(zkr_client_t *c, sub_event_t *e)
{
    sub_t *s = c->subs;
    while (s && s->id != e->id)
        s = s->next;
    if (s && s->fn) {
        s->calling = 1;
        c->in_sub = 1;
        c->sub_thread = pthread_self();
        zkr__sub_fn fn = s->fn;
        void *arg = s->arg;
        pthread_mutex_unlock(&c->mu);
        fn(c, arg, e->type, e->path);
        pthread_mutex_lock(&c->mu);
        c->in_sub = 0;
        s->calling = 0;
        if (s->orphan)
            free(s); /* it removed itself during the call */
        pthread_cond_broadcast(&c->cond);
    }
    free(e->path);
    free(e);
}

/* ---- handles ------------------------------------------------------------- */

static void session_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)zh;
    (void)path;
    zkr__zh_t *h = ctx;
    if (type != ZOO_SESSION_EVENT || !h)
        return;
    zkr_client_t *c = h->c;
    pthread_mutex_lock(&c->mu);
    if (h->gen == c->gen && !c->closing) {
        if (c->raw_n < RAW_MAX)
            c->raw[c->raw_n++] = state;
        else
            c->raw_overflow = 1;
        wake_all_waiters_locked(c, ZKR__WAKE_SESSION);
        pthread_cond_signal(&c->wake);
    }
    pthread_mutex_unlock(&c->mu);
}

/* Make a new handle (not yet current).  Called without c->mu. */
static int handle_new(zkr_client_t *c, unsigned gen, zkr__zh_t **out)
{
    zkr__zh_t *h = calloc(1, sizeof *h);
    if (!h)
        return ZKR_ENOMEM;
    h->c = c;
    h->gen = gen;
    h->refs = 1;
    int flags = c->allow_read_only ? ZOO_READONLY : 0;
    errno = 0;
    h->zh = zookeeper_init(c->hosts, session_watcher, c->session_timeout_req, NULL, h, flags);
    if (!h->zh) {
        int e = errno;
        free(h);
        return e == ENOMEM ? ZKR_ENOMEM : (e == EINVAL ? ZKR_EINVAL : ZKR_EZOOKEEPER);
    }
    if (c->auth_scheme) {
        int rc = zoo_add_auth(h->zh, c->auth_scheme, c->auth_data, c->auth_data_len, NULL, NULL);
        if (rc != ZOK) {
            zookeeper_close(h->zh);
            free(h);
            return zkr__zk_error(rc);
        }
    }
    *out = h;
    return ZKR_OK;
}

static void handle_close(zkr__zh_t *h)
{
    if (h->zh)
        zookeeper_close(h->zh);
    free(h);
}

int zkr__client_get_handle(zkr_client_t *c, zkr__zh_t **h)
{
    pthread_mutex_lock(&c->mu);
    if (c->closing || !c->cur) {
        pthread_mutex_unlock(&c->mu);
        return ZKR_ECLOSED;
    }
    c->cur->refs++;
    *h = c->cur;
    pthread_mutex_unlock(&c->mu);
    return ZKR_OK;
}

void zkr__client_put_handle(zkr_client_t *c, zkr__zh_t *h)
{
    if (!h)
        return;
    pthread_mutex_lock(&c->mu);
    if (--h->refs == 0)
        pthread_cond_signal(&c->wake); /* a retired handle can be closed */
    pthread_mutex_unlock(&c->mu);
}

zhandle_t *zkr__zh(const zkr__zh_t *h)
{
    return h->zh;
}

int64_t zkr__zh_session(zkr_client_t *c, const zkr__zh_t *h)
{
    pthread_mutex_lock(&c->mu);
    int64_t s = h->session_id;
    pthread_mutex_unlock(&c->mu);
    return s;
}

int zkr__zh_usable(zkr_client_t *c, const zkr__zh_t *h)
{
    pthread_mutex_lock(&c->mu);
    int ok = (h == c->cur && !c->closing && is_usable_state(c->state) && c->connected);
    pthread_mutex_unlock(&c->mu);
    return ok;
}

pthread_mutex_t *zkr__client_mutex(zkr_client_t *c)
{
    return &c->mu;
}

int zkr__client_closing_locked(const zkr_client_t *c)
{
    return c->closing;
}

/* ---- users (threads inside a blocking call) ---------------------------- */

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

static int wait_usable_locked(zkr_client_t *c, int64_t deadline, int (*ok)(zkr_state_t))
{
    for (;;) {
        if (c->closing)
            return ZKR_ECLOSED;
        if (c->auth_failed)
            return ZKR_ENOAUTH;
        if (ok(c->state) && c->connected)
            return ZKR_OK;
        if (zkr__cond_wait_until(&c->cond, &c->mu, deadline) == ETIMEDOUT) {
            if (ok(c->state) && c->connected && !c->closing)
                return ZKR_OK;
            return c->closing ? ZKR_ECLOSED : ZKR_ETIMEDOUT;
        }
    }
}

int zkr__client_wait_usable(zkr_client_t *c, int64_t deadline)
{
    pthread_mutex_lock(&c->mu);
    int rc = wait_usable_locked(c, deadline, is_usable_state);
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
        if (c->state == ZKR_STATE_LOST || c->auth_failed || (c->have_session && c->session_id != session)) {
            rc = ZKR_ESESSIONLOST;
            break;
        }
        if (is_usable_state(c->state) && c->connected) {
            rc = ZKR_OK;
            break;
        }
        if (zkr__cond_wait_until(&c->cond, &c->mu, deadline) == ETIMEDOUT) {
            rc = ZKR_ETIMEDOUT;
            if (!c->closing && is_usable_state(c->state) && c->connected && c->session_id == session)
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
    rc = wait_usable_locked(c, deadline, is_connected_state);
    pthread_mutex_unlock(&c->mu);
    zkr__client_leave(c);
    return rc;
}

/* ---- background deletes ---------------------------------------------------- */

static void add_delete(zkr_client_t *c, const char *path, const char *prefix, int64_t session_id)
{
    pending_delete_t *d = calloc(1, sizeof *d);
    char *p = path ? strdup(path) : NULL;
    char *x = prefix ? strdup(prefix) : NULL;
    if (!d || !p || (prefix && !x)) {
        /* Out of memory: the node still vanishes with its session. */
        free(d);
        free(p);
        free(x);
        return;
    }
    d->path = p;
    d->prefix = x;
    d->session = session_id;
    d->backoff = DELETE_RETRY_MIN_MS;
    pthread_mutex_lock(&c->mu);
    d->id = ++c->next_id;
    d->next = c->deletes;
    c->deletes = d;
    pthread_cond_signal(&c->wake);
    pthread_mutex_unlock(&c->mu);
}

void zkr__client_delete_later(zkr_client_t *c, const char *path, int64_t session_id)
{
    add_delete(c, path, NULL, session_id);
}

void zkr__client_delete_prefix_later(zkr_client_t *c, const char *dir, const char *prefix,
                                     int64_t session_id)
{
    add_delete(c, dir, prefix, session_id);
}

int zkr__client_pending_deletes(zkr_client_t *c)
{
    int n = 0;
    pthread_mutex_lock(&c->mu);
    for (pending_delete_t *d = c->deletes; d; d = d->next)
        n++;
    pthread_mutex_unlock(&c->mu);
    return n;
}

static void delete_free(pending_delete_t *d)
{
    free(d->prefix);
    free(d->path);
    free(d);
}

static void answer_locked(zkr_client_t *c, const zkr__zh_t *h, int zrc);

static void delete_done(int rc, const void *data)
{
    delete_op_t *op = (delete_op_t *)data;
    zkr_client_t *c = op->c;
    pthread_mutex_lock(&c->mu);
    answer_locked(c, op->h, rc);
    for (pending_delete_t **p = &c->deletes; *p; p = &(*p)->next) {
        pending_delete_t *d = *p;
        if (d->id != op->id)
            continue;
        d->inflight = 0;
        int transient = (rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT || rc == ZRUNTIMEINCONSISTENCY || rc == ZCLOSING ||
                         rc == ZSESSIONEXPIRED || rc == ZINVALIDSTATE || rc == ZSESSIONMOVED);
        if (rc == ZOK || rc == ZNONODE || (!transient && ++d->failures >= DELETE_MAX_FAILURES)) {
            if (rc != ZOK && rc != ZNONODE)
                fprintf(stderr, "zkrecipes: giving up deleting %s: %s\n", d->path, zerror(rc));
            *p = d->next;
            delete_free(d);
        } else {
            d->retry_at = zkr__now_ms() + d->backoff;
            d->backoff = d->backoff * 2 > DELETE_RETRY_MAX_MS ? DELETE_RETRY_MAX_MS : d->backoff * 2;
        }
        break;
    }
    pthread_cond_signal(&c->wake);
    pthread_mutex_unlock(&c->mu);
    free(op);
}

static void prefix_list_done(int rc, const struct String_vector *names, const void *data)
{
    delete_op_t *op = (delete_op_t *)data;
    zkr_client_t *c = op->c;
    char *dir = NULL, *prefix = NULL;
    int64_t session = 0;
    pthread_mutex_lock(&c->mu);
    answer_locked(c, op->h, rc);
    for (pending_delete_t **p = &c->deletes; *p; p = &(*p)->next) {
        pending_delete_t *d = *p;
        if (d->id != op->id)
            continue;
        d->inflight = 0;
        if (rc == ZOK || rc == ZNONODE) {
            *p = d->next;
            dir = d->path;
            prefix = d->prefix;
            session = d->session;
            free(d);
        } else {
            d->retry_at = zkr__now_ms() + d->backoff;
            d->backoff = d->backoff * 2 > DELETE_RETRY_MAX_MS ? DELETE_RETRY_MAX_MS : d->backoff * 2;
        }
        break;
    }
    pthread_cond_signal(&c->wake);
    pthread_mutex_unlock(&c->mu);
    if (rc == ZOK && names && dir && prefix) {
        size_t pl = strlen(prefix);
        for (int32_t i = 0; i < names->count; i++) {
            if (names->data[i] && strncmp(names->data[i], prefix, pl) == 0) {
                char *full = zkr__path_join(dir, names->data[i]);
                if (full)
                    add_delete(c, full, NULL, session);
                free(full);
            }
        }
    }
    free(dir);
    free(prefix);
    free(op);
}

/* Called with c->mu held; may drop and retake it.  Returns the next time
 * something is due (INT64_MAX if nothing). */
static int64_t run_deletes_locked(zkr_client_t *c)
{
    int64_t next = INT64_MAX;
    /* Entries are kept across sessions: every path carries a unique
     * protected uuid, so deleting it later is always safe, and a session
     * declared LOST by timeout may still be alive on the server. */
    if (!c->connected || !is_usable_state(c->state) || !c->cur)
        return next;
    int64_t now = zkr__now_ms();
    zkr__zh_t *h = c->cur;
    for (pending_delete_t *d = c->deletes; d; d = d->next) {
        if (d->inflight)
            continue;
        if (d->retry_at > now) {
            if (d->retry_at < next)
                next = d->retry_at;
            continue;
        }
        delete_op_t *op = malloc(sizeof *op);
        if (!op) {
            d->retry_at = now + DELETE_RETRY_MIN_MS;
            next = d->retry_at;
            continue;
        }
        op->c = c;
        op->h = h;
        op->id = d->id;
        d->inflight = 1;
        /* zoo_adelete only queues the request; its completion runs later on
         * ZooKeeper's completion thread and takes c->mu then. */
        int rc = d->prefix ? zoo_aget_children(h->zh, d->path, 0, prefix_list_done, op)
                           : zoo_adelete(h->zh, d->path, -1, delete_done, op);
        if (rc != ZOK) {
            free(op);
            d->inflight = 0;
            d->retry_at = now + d->backoff;
            if (d->retry_at < next)
                next = d->retry_at;
        }
    }
    return next;
}

/* ---- posted tasks and listeners ----------------------------------------------- */

int zkr__client_post(zkr_client_t *c, void (*fn)(void *), void *arg)
{
    task_t *t = malloc(sizeof *t);
    if (!t)
        return ZKR_ENOMEM;
    t->fn = fn;
    t->arg = arg;
    t->next = NULL;
    pthread_mutex_lock(&c->mu);
    if (c->closing) {
        pthread_mutex_unlock(&c->mu);
        free(t);
        return ZKR_ECLOSED;
    }
    if (c->task_tail)
        c->task_tail->next = t;
    else
        c->task_head = t;
    c->task_tail = t;
    pthread_cond_signal(&c->wake);
    pthread_mutex_unlock(&c->mu);
    return ZKR_OK;
}

static int add_listener(zkr_client_t *c, zkr_state_fn fn, void *ctx, int internal)
{
    if (!c || !fn)
        return ZKR_EINVAL;
    listener_t *l = calloc(1, sizeof *l);
    if (!l)
        return ZKR_ENOMEM;
    l->fn = fn;
    l->ctx = ctx;
    l->internal = internal;
    pthread_mutex_lock(&c->mu);
    if (c->closing) {
        pthread_mutex_unlock(&c->mu);
        free(l);
        return ZKR_ECLOSED;
    }
    listener_t **p = &c->listeners;
    for (; *p; p = &(*p)->next) {
        if (!(*p)->removed && (*p)->fn == fn && (*p)->ctx == ctx && (*p)->internal == internal) {
            pthread_mutex_unlock(&c->mu);
            free(l);
            return ZKR_ENODEEXISTS;
        }
    }
    *p = l; /* append: listeners run in registration order */
    pthread_mutex_unlock(&c->mu);
    return ZKR_OK;
}

static int remove_listener(zkr_client_t *c, zkr_state_fn fn, void *ctx, int internal)
{
    if (!c || !fn)
        return ZKR_EINVAL;
    pthread_mutex_lock(&c->mu);
    listener_t *l = c->listeners;
    for (; l; l = l->next) {
        if (!l->removed && l->fn == fn && l->ctx == ctx && l->internal == internal)
            break;
    }
    if (!l) {
        pthread_mutex_unlock(&c->mu);
        return ZKR_ENONODE;
    }
    l->removed = 1; /* freed by the client thread between calls */
    int self = c->in_listener && pthread_equal(pthread_self(), c->listener_thread);
    while (l->calling && !self)
        pthread_cond_wait(&c->cond, &c->mu);
    pthread_cond_signal(&c->wake);
    pthread_mutex_unlock(&c->mu);
    return ZKR_OK;
}

int zkr_client_add_listener(zkr_client_t *c, zkr_state_fn fn, void *ctx)
{
    return add_listener(c, fn, ctx, 0);
}

int zkr_client_remove_listener(zkr_client_t *c, zkr_state_fn fn, void *ctx)
{
    return remove_listener(c, fn, ctx, 0);
}

int zkr__client_add_hook(zkr_client_t *c, zkr_state_fn fn, void *ctx)
{
    return add_listener(c, fn, ctx, 1);
}

int zkr__client_remove_hook(zkr_client_t *c, zkr_state_fn fn, void *ctx)
{
    return remove_listener(c, fn, ctx, 1);
}

static void reap_removed_listeners_locked(zkr_client_t *c)
{
    for (listener_t **p = &c->listeners; *p;) {
        listener_t *l = *p;
        if (l->removed && !l->calling) {
            *p = l->next;
            free(l);
        } else {
            p = &l->next;
        }
    }
}

static void update_tracks_locked(zkr_client_t *c, zkr_state_t s);

/* Tell every listener (public ones first, then internal hooks) about `s`.
 * Called with c->mu held; drops it around each call. */
static void deliver_locked(zkr_client_t *c, zkr_state_t s)
{
    for (int internal = 0; internal <= 1; internal++) {
        for (listener_t *l = c->listeners; l; l = l->next) {
            if (l->removed || l->internal != internal)
                continue;
            l->calling = 1;
            c->in_listener = 1;
            c->listener_thread = pthread_self();
            pthread_mutex_unlock(&c->mu);
            l->fn(c, s, l->ctx);
            pthread_mutex_lock(&c->mu);
            l->calling = 0;
            c->in_listener = 0;
            pthread_cond_broadcast(&c->cond);
            /* l stays linked (removal only marks it), so l->next is valid */
        }
    }
    reap_removed_listeners_locked(c);
    update_tracks_locked(c, s);
}

/* ---- tracked holds ---------------------------------------------------------- */

int zkr__track_add(zkr_client_t *c, const char *path, int64_t session, zkr_hold_fn fn, void *ctx,
                   zkr__track_t **out)
{
    zkr__track_t *t = calloc(1, sizeof *t);
    if (!t || !(t->path = strdup(path))) {
        free(t);
        return ZKR_ENOMEM;
    }
    t->session = session;
    t->fn = fn;
    t->ctx = ctx;
    pthread_mutex_lock(&c->mu);
    if (c->state == ZKR_STATE_LOST || (c->have_session && c->session_id != session))
        t->state = ZKR_HOLD_LOST;
    else if (is_usable_state(c->state) && c->connected)
        t->state = ZKR_HOLD_SAFE;
    else
        t->state = ZKR_HOLD_IN_DOUBT;
    t->pass = c->track_pass;
    t->next = c->tracks;
    c->tracks = t;
    pthread_mutex_unlock(&c->mu);
    *out = t;
    return ZKR_OK;
}

zkr_hold_state_t zkr__track_state(zkr_client_t *c, const zkr__track_t *t)
{
    if (!t)
        return ZKR_HOLD_NONE;
    pthread_mutex_lock(&c->mu);
    zkr_hold_state_t st = t->state;
    pthread_mutex_unlock(&c->mu);
    return st;
}

static void track_free(zkr__track_t *t)
{
    free(t->path);
    free(t);
}

zkr_hold_state_t zkr__track_remove(zkr_client_t *c, zkr__track_t *t)
{
    if (!t)
        return ZKR_HOLD_NONE;
    pthread_mutex_lock(&c->mu);
    for (zkr__track_t **p = &c->tracks; *p; p = &(*p)->next) {
        if (*p == t) {
            *p = t->next;
            break;
        }
    }
    t->fn = NULL;
    int self = c->in_track && pthread_equal(pthread_self(), c->track_thread);
    if (t->calling && self) {
        t->orphan = 1; /* freed by the notifier after this call */
    } else {
        while (t->calling)
            pthread_cond_wait(&c->cond, &c->mu);
    }
    zkr_hold_state_t st = t->state;
    int orphan = t->orphan;
    pthread_mutex_unlock(&c->mu);
    if (!orphan)
        track_free(t);
    return st;
}

/* Is our node still there, owned by our session?  c->mu held; dropped
 * around the call. */
static int track_verify_locked(zkr_client_t *c, zkr__track_t *t)
{
    zkr__zh_t *h = c->cur;
    if (!h || t->session != c->session_id)
        return 0;
    h->refs++;
    char *path = strdup(t->path);
    pthread_mutex_unlock(&c->mu);
    struct Stat st;
    int zrc = path ? zoo_exists(h->zh, path, 0, &st) : ZSYSTEMERROR;
    free(path);
    pthread_mutex_lock(&c->mu);
    answer_locked(c, h, zrc);
    h->refs--;
    if (zrc == ZOK)
        return st.ephemeralOwner == t->session ? 1 : 0;
    if (zrc == ZNONODE)
        return 0;
    return -1; /* could not tell: stay in doubt */
}

/* Bring every tracked hold in line with client state `s` and tell it.
 * c->mu held; dropped around ZooKeeper calls and callbacks. */
static void update_tracks_locked(zkr_client_t *c, zkr_state_t s)
{
    unsigned pass = ++c->track_pass;
    for (;;) {
        zkr__track_t *t = c->tracks;
        while (t && t->pass == pass)
            t = t->next;
        if (!t)
            break;
        t->pass = pass;
        zkr_hold_state_t next = t->state;
        if (t->state == ZKR_HOLD_LOST) {
            continue;
        } else if (s == ZKR_STATE_LOST) {
            next = ZKR_HOLD_LOST;
        } else if (s == ZKR_STATE_SUSPENDED || s == ZKR_STATE_READ_ONLY) {
            next = ZKR_HOLD_IN_DOUBT;
        } else if (is_usable_state(s) && t->state == ZKR_HOLD_IN_DOUBT) {
            t->calling = 1; /* keep it alive while the mutex is dropped */
            int v = track_verify_locked(c, t);
            t->calling = 0;
            pthread_cond_broadcast(&c->cond);
            if (t->orphan || !t->fn) {
                if (t->orphan)
                    track_free(t);
                continue; /* removed meanwhile */
            }
            next = v > 0 ? ZKR_HOLD_SAFE : (v == 0 ? ZKR_HOLD_LOST : ZKR_HOLD_IN_DOUBT);
        }
        if (next == t->state)
            continue;
        t->state = next;
        if (!t->fn)
            continue;
        t->calling = 1;
        c->in_track = 1;
        c->track_thread = pthread_self();
        zkr_hold_fn fn = t->fn;
        void *ctx = t->ctx;
        char *path = t->path;
        pthread_mutex_unlock(&c->mu);
        fn(next, path, ctx);
        pthread_mutex_lock(&c->mu);
        c->in_track = 0;
        t->calling = 0;
        if (t->orphan)
            track_free(t);
        pthread_cond_broadcast(&c->cond);
    }
}

/* ---- the state machine ------------------------------------------------------------ */

static void report_locked(zkr_client_t *c, zkr_state_t s)
{
    if (s == c->state)
        return; /* duplicates are not reported */
    c->state = s;
    if (c->rep_n < REPORT_MAX) {
        c->reports[(c->rep_head + c->rep_n) % REPORT_MAX] = s;
        c->rep_n++;
    } else {
        /* Listeners are far behind: keep the newest state so they end up
         * told where the client really is. */
        c->reports[(c->rep_head + REPORT_MAX - 1) % REPORT_MAX] = s;
    }
    pthread_cond_broadcast(&c->cond);
}

static void on_raw_state_locked(zkr_client_t *c, int zs)
{
    zkr__zh_t *h = c->cur;
    if (zs == ZOO_CONNECTED_STATE) {
        const clientid_t *id = zoo_client_id(h->zh);
        c->connected = 1;
        c->have_session = 1;
        c->session_id = id->client_id;
        memcpy(c->passwd, id->passwd, sizeof c->passwd);
        c->session_timeout = zoo_recv_timeout(h->zh);
        h->session_id = id->client_id;
        c->lost_deadline = INT64_MAX;
        if (!c->ever_connected) {
            c->ever_connected = 1;
            report_locked(c, ZKR_STATE_CONNECTED);
        } else if (!is_usable_state(c->state)) {
            report_locked(c, ZKR_STATE_RECONNECTED);
        }
    } else if (zs == ZOO_CONNECTING_STATE || zs == ZOO_ASSOCIATING_STATE) {
        c->connected = 0;
        if (is_connected_state(c->state)) {
            report_locked(c, ZKR_STATE_SUSPENDED);
            int64_t t = c->session_timeout > 0 ? c->session_timeout : c->session_timeout_req;
            c->lost_deadline = zkr__now_ms() + t;
        }
    } else if (zs == ZOO_EXPIRED_SESSION_STATE) {
        c->connected = 0;
        c->lost_deadline = INT64_MAX;
        if (c->ever_connected)
            report_locked(c, ZKR_STATE_LOST);
        c->need_rebuild = 1;
    } else if (zs == ZOO_AUTH_FAILED_STATE) {
        c->connected = 0;
        c->auth_failed = 1;
        c->lost_deadline = INT64_MAX;
        if (c->ever_connected)
            report_locked(c, ZKR_STATE_LOST);
        pthread_cond_broadcast(&c->cond);
    } else if (zs == ZOO_READONLY_STATE) {
        const clientid_t *id = zoo_client_id(h->zh);
        c->connected = 1;
        c->have_session = 1;
        c->session_id = id->client_id;
        h->session_id = id->client_id;
        c->lost_deadline = INT64_MAX;
        c->ever_connected = 1;
        report_locked(c, ZKR_STATE_READ_ONLY);
    }
}

static void process_raw_locked(zkr_client_t *c);

/* The server told a request on h that the session is gone (see
 * zkr__zh_answer).  c->mu held. */
static void answer_locked(zkr_client_t *c, const zkr__zh_t *h, int zrc)
{
    if ((zrc != ZSESSIONEXPIRED && zrc != ZSESSIONMOVED) || h != c->cur || c->closing)
        return;
    if (!c->connected && c->state == ZKR_STATE_LOST)
        return; /* already known */
    process_raw_locked(c); /* earlier events first, in order */
    on_raw_state_locked(c, ZOO_EXPIRED_SESSION_STATE);
    wake_all_waiters_locked(c, ZKR__WAKE_SESSION);
    pthread_cond_signal(&c->wake);
}

int zkr__zh_answer(zhandle_t *zh, int zrc)
{
    if ((zrc != ZSESSIONEXPIRED && zrc != ZSESSIONMOVED) || !zh)
        return zrc;
    const zkr__zh_t *h = zoo_get_context(zh);
    if (!h)
        return zrc;
    zkr_client_t *c = h->c;
    pthread_mutex_lock(&c->mu);
    answer_locked(c, h, zrc);
    pthread_mutex_unlock(&c->mu);
    return zrc;
}

static void process_raw_locked(zkr_client_t *c)
{
    if (c->raw_overflow) {
        /* More events than we could queue: the handle's present state is
         * what matters. */
        c->raw_overflow = 0;
        c->raw_n = 0;
        on_raw_state_locked(c, zoo_state(c->cur->zh));
    }
    for (int i = 0; i < c->raw_n; i++)
        on_raw_state_locked(c, c->raw[i]);
    c->raw_n = 0;
}

/* Replace the current handle by a new session.  c->mu held; dropped while
 * the new handle is created. */
static void rebuild_locked(zkr_client_t *c)
{
    c->need_rebuild = 0;
    unsigned gen = c->gen + 1;
    pthread_mutex_unlock(&c->mu);
    zkr__zh_t *nh = NULL;
    int rc = handle_new(c, gen, &nh);
    pthread_mutex_lock(&c->mu);
    if (rc != ZKR_OK || c->closing) {
        if (nh) {
            pthread_mutex_unlock(&c->mu);
            handle_close(nh);
            pthread_mutex_lock(&c->mu);
        }
        if (!c->closing)
            c->need_rebuild = 1; /* try again shortly */
        return;
    }
    zkr__zh_t *old = c->cur;
    c->gen = gen;
    c->cur = nh;
    c->connected = 0;
    c->raw_n = 0;
    c->raw_overflow = 0;
    old->refs--; /* the client's own reference */
    old->next_retired = c->retired;
    c->retired = old;
    /* Waiters re-evaluate: whatever they waited for belonged to the old
     * session. */
    wake_all_waiters_locked(c, ZKR__WAKE_SESSION);
}

static void *closer_main(void *arg)
{
    handle_close(arg);
    return NULL;
}

/* Close retired handles nobody uses any more.  zookeeper_close may wait a
 * whole receive timeout for a stalled server, so it runs on a thread of its
 * own: the client thread must go on reporting the new session meanwhile.
 * zkr_client_close joins these threads. */
static void close_retired_locked(zkr_client_t *c)
{
    for (zkr__zh_t **p = &c->retired; *p;) {
        zkr__zh_t *h = *p;
        if (h->refs > 0) {
            p = &h->next_retired;
            continue;
        }
        zkr__zh_t *next = h->next_retired; /* h is the closer's from now on */
        closer_t *cl = malloc(sizeof *cl);
        if (cl && pthread_create(&cl->thread, NULL, closer_main, h) == 0) {
            *p = next;
            cl->next = c->closers;
            c->closers = cl;
            continue;
        }
        free(cl);
        /* No thread to spare: close it here. */
        *p = next;
        pthread_mutex_unlock(&c->mu);
        handle_close(h);
        pthread_mutex_lock(&c->mu);
        p = &c->retired; /* the list may have changed meanwhile */
    }
}

static void *client_main(void *arg)
{
    zkr_client_t *c = arg;
    int64_t rebuild_at = 0;
    pthread_mutex_lock(&c->mu);
    while (!c->closing) {
        process_raw_locked(c);

        int64_t now = zkr__now_ms();
        if (c->state == ZKR_STATE_SUSPENDED && now >= c->lost_deadline) {
            c->lost_deadline = INT64_MAX;
            report_locked(c, ZKR_STATE_LOST);
            c->need_rebuild = 1;
        }
        if (c->need_rebuild && now >= rebuild_at) {
            rebuild_locked(c);
            if (c->need_rebuild)
                rebuild_at = zkr__now_ms() + 1000;
            continue;
        }
        close_retired_locked(c);

        if (c->rep_n > 0) {
            zkr_state_t s = c->reports[c->rep_head];
            c->rep_head = (c->rep_head + 1) % REPORT_MAX;
            c->rep_n--;
            deliver_locked(c, s);
            continue;
        }
        if (c->sev_head) {
            sub_event_t *e = c->sev_head;
            c->sev_head = e->next;
            if (!c->sev_head)
                c->sev_tail = NULL;
            run_sub_event_locked(c, e);
            continue;
        }
        if (c->task_head) {
            task_t *t = c->task_head;
            c->task_head = t->next;
            if (!c->task_head)
                c->task_tail = NULL;
            pthread_mutex_unlock(&c->mu);
            t->fn(t->arg);
            free(t);
            pthread_mutex_lock(&c->mu);
            continue;
        }
        reap_removed_listeners_locked(c);

        int64_t next = run_deletes_locked(c);
        if (c->lost_deadline < next)
            next = c->lost_deadline;
        if (c->need_rebuild && rebuild_at < next)
            next = rebuild_at;
        if (c->raw_n == 0 && !c->raw_overflow)
            zkr__cond_wait_until(&c->wake, &c->mu, next);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

/* ---- open / close --------------------------------------------------------------- */

static int copy_opt_string(char **dst, const char *src)
{
    *dst = NULL;
    if (!src)
        return ZKR_OK;
    *dst = strdup(src);
    return *dst ? ZKR_OK : ZKR_ENOMEM;
}

static void client_free(zkr_client_t *c)
{
    while (c->task_head) {
        task_t *t = c->task_head;
        c->task_head = t->next;
        /* Posted work that never ran still owns its argument: run it now
         * (closing is set, so it only frees). */
        t->fn(t->arg);
        free(t);
    }
    while (c->sev_head) {
        sub_event_t *e = c->sev_head;
        c->sev_head = e->next;
        free(e->path);
        free(e);
    }
    while (c->tracks) {
        zkr__track_t *t = c->tracks;
        c->tracks = t->next;
        track_free(t);
    }
    while (c->subs) {
        sub_t *s = c->subs;
        c->subs = s->next;
        free(s);
    }
    while (c->deletes) {
        pending_delete_t *d = c->deletes;
        c->deletes = d->next;
        delete_free(d);
    }
    while (c->listeners) {
        listener_t *l = c->listeners;
        c->listeners = l->next;
        free(l);
    }
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cond);
    pthread_cond_destroy(&c->wake);
    free(c->hosts);
    free(c->auth_scheme);
    free(c->auth_data);
    free(c);
}

static int valid_hosts(const char *hosts)
{
    size_t n = strnlen(hosts, HOSTS_MAX + 1);
    if (n == 0 || n > HOSTS_MAX)
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)hosts[i];
        if (ch <= ' ' || ch == 0x7f || ch == '/')
            return 0; /* a chroot goes in the options, not the host list */
    }
    return 1;
}

int zkr_client_open(zkr_client_t **out, const char *hosts, const zkr_client_options_t *opt_in)
{
    if (out)
        *out = NULL;
    if (!out || !hosts || !valid_hosts(hosts))
        return ZKR_EINVAL;
    zkr_client_options_t opt;
    if (opt_in)
        opt = *opt_in;
    else
        zkr_client_options_init(&opt);
    if (opt.session_timeout_ms < 0 || opt.zk_log_level < -1 || opt.zk_log_level > 4)
        return ZKR_EINVAL;
    if (opt.chroot && opt.chroot[0] && !zkr__path_valid(opt.chroot))
        return ZKR_EINVAL;
    if (opt.auth_scheme && (!opt.auth_data || opt.auth_data_len < 0))
        return ZKR_EINVAL;
    if (opt.session_timeout_ms == 0)
        opt.session_timeout_ms = 15000;

    zkr_client_t *c = calloc(1, sizeof *c);
    if (!c)
        return ZKR_ENOMEM;
    int rc = ZKR_OK;
    size_t hl = strlen(hosts) + (opt.chroot ? strlen(opt.chroot) : 0) + 1;
    c->hosts = malloc(hl);
    if (!c->hosts) {
        free(c);
        return ZKR_ENOMEM;
    }
    snprintf(c->hosts, hl, "%s%s", hosts, opt.chroot ? opt.chroot : "");
    c->session_timeout_req = opt.session_timeout_ms;
    c->allow_read_only = opt.allow_read_only != 0;
    c->state = ZKR_STATE_LATENT;
    c->lost_deadline = INT64_MAX;
    if (copy_opt_string(&c->auth_scheme, opt.auth_scheme) != ZKR_OK) {
        free(c->hosts);
        free(c);
        return ZKR_ENOMEM;
    }
    if (opt.auth_scheme) {
        c->auth_data = malloc(opt.auth_data_len ? (size_t)opt.auth_data_len : 1);
        if (!c->auth_data) {
            free(c->auth_scheme);
            free(c->hosts);
            free(c);
            return ZKR_ENOMEM;
        }
        memcpy(c->auth_data, opt.auth_data, (size_t)opt.auth_data_len);
        c->auth_data_len = opt.auth_data_len;
    }
    if (pthread_mutex_init(&c->mu, NULL) != 0) {
        free(c->auth_data);
        free(c->auth_scheme);
        free(c->hosts);
        free(c);
        return ZKR_ESYSTEM;
    }
    if (zkr__cond_init(&c->cond) != 0 || zkr__cond_init(&c->wake) != 0) {
        pthread_mutex_destroy(&c->mu);
        free(c->auth_data);
        free(c->auth_scheme);
        free(c->hosts);
        free(c);
        return ZKR_ESYSTEM;
    }
    if (opt.zk_log_level >= 0)
        zoo_set_debug_level((ZooLogLevel)opt.zk_log_level);

    c->gen = 1;
    rc = handle_new(c, c->gen, &c->cur);
    if (rc != ZKR_OK) {
        client_free(c);
        return rc;
    }
    if (pthread_create(&c->thread, NULL, client_main, c) != 0) {
        handle_close(c->cur);
        client_free(c);
        return ZKR_ESYSTEM;
    }
    c->thread_started = 1;
    if (opt.connect_timeout_ms >= 0) {
        rc = zkr_client_wait_connected(c, opt.connect_timeout_ms);
        if (rc != ZKR_OK) {
            zkr_client_close(c);
            return rc;
        }
    }
    *out = c;
    return ZKR_OK;
}

void zkr_client_close(zkr_client_t *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    c->closing = 1;
    wake_all_waiters_locked(c, ZKR__WAKE_CLOSE);
    pthread_cond_broadcast(&c->cond);
    pthread_cond_signal(&c->wake);
    while (c->users > 0)
        pthread_cond_wait(&c->cond, &c->mu);
    pthread_mutex_unlock(&c->mu);

    if (c->thread_started)
        pthread_join(c->thread, NULL);
    /* The client thread has stopped: nothing adds closers any more. */
    while (c->closers) {
        closer_t *cl = c->closers;
        c->closers = cl->next;
        pthread_join(cl->thread, NULL);
        free(cl);
    }

    /* Closing the session deletes every ephemeral node it owns at once. */
    pthread_mutex_lock(&c->mu);
    zkr__zh_t *cur = c->cur;
    c->cur = NULL;
    zkr__zh_t *ret = c->retired;
    c->retired = NULL;
    pthread_mutex_unlock(&c->mu);
    if (cur)
        handle_close(cur);
    while (ret) {
        zkr__zh_t *n = ret->next_retired;
        handle_close(ret);
        ret = n;
    }
    client_free(c);
}

/* ---- queries ---------------------------------------------------------------------- */

zkr_state_t zkr_client_state(zkr_client_t *c)
{
    if (!c)
        return ZKR_STATE_LATENT;
    pthread_mutex_lock(&c->mu);
    zkr_state_t s = c->closing ? ZKR_STATE_CLOSED : c->state;
    pthread_mutex_unlock(&c->mu);
    return s;
}

int zkr_client_is_connected(zkr_client_t *c)
{
    if (!c)
        return 0;
    pthread_mutex_lock(&c->mu);
    int ok = !c->closing && c->connected && is_usable_state(c->state);
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

int zkr_client_session_timeout(zkr_client_t *c, int *timeout_ms)
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

int zkr__ensure_path(zhandle_t *zh, const char *path)
{
    size_t n = strlen(path);
    char *buf = malloc(n + 1);
    if (!buf)
        return ZKR_ENOMEM;
    memcpy(buf, path, n + 1);
    int rc = ZKR_OK;
    /* Create each ancestor in turn, then the path itself. */
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != '\0')
            continue;
        char saved = buf[i];
        buf[i] = '\0';
        int zrc = zkr__zh_answer(zh, zoo_create(zh, buf, "", 0, &ZOO_OPEN_ACL_UNSAFE, ZOO_CONTAINER, NULL, 0));
        buf[i] = saved;
        if (zrc != ZOK && zrc != ZNODEEXISTS) {
            rc = zkr__zk_error(zrc);
            break;
        }
    }
    free(buf);
    return rc;
}

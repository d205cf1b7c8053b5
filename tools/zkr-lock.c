/* zkr-lock: run a command while holding a ZooKeeper lock.
 *
 *   zkr-lock [options] LOCKPATH -- COMMAND [ARG...]
 *   zkr-lock [options] --print LOCKPATH
 *
 * The main thread does every lock operation and every decision: it
 * connects, acquires (the hold listener is set first), starts the command,
 * then loops on poll() over the event pipe (hold and connection state
 * changes, signals, the child's end), polling the hold state as well, and
 * stops the command when the hold is lost or in doubt longer than --grace.
 * The lock is released when the command ends, whatever happened.  See
 * zkr-lock.1 for the user's side.
 *
 * --leader joins a leader election instead (zkr_latch_t, Curator's
 * LeaderLatch) and runs the command while this process leads.  The latch
 * keeps leadership through a connection that is down (the session policy:
 * only a LOST session ends it), and the tool treats leadership as it treats
 * a hold: IN_DOUBT while the connection is down (so --grace applies), LOST
 * once the latch no longer leads or leads a new term. */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tools/zkrl.h"

#define SLICE_MS 200 /* longest sleep of any wait loop */

typedef struct tool {
    zkrl_opts_t o;
    zkr_client_t *c;
    zkr_mutex_t *m;        /* mutex */
    zkr_rwlock_t *rw;      /* --read, --write */
    zkr_semaphore_t *sem;  /* --semaphore N, --semaphore-mutex (1 lease) */
    zkr_lease_t *lease;
    zkr_latch_t *latch;    /* --leader */
    char *id;              /* its participant id (malloc'd) */
    int64_t term_token;    /* the token of the term the command runs in */
    zkr_lock_ref_t ref;    /* mutex and read/write halves */
    int held;
} tool_t;

/* ---- listeners: log, record and wake the main thread, nothing else -------------- */

static void on_hold(zkr_lock_ref_t lock, zkr_hold_state_t s, const char *node, void *ctx)
{
    (void)ctx;
    zkrl_vlog("hold of %s %s: %s", zkr_lock_kind(lock), node, zkr_hold_state_name(s));
    zkrl_event(ZKRL_EV_HOLD, (int)s);
}

static void on_lease(zkr_semaphore_t *sem, zkr_hold_state_t s, const char *node, void *ctx)
{
    (void)sem, (void)ctx;
    zkrl_vlog("hold of lease %s: %s", node, zkr_hold_state_name(s));
    zkrl_event(ZKRL_EV_HOLD, (int)s);
}

static void on_leader(zkr_latch_t *l, int is_leader, int64_t token, void *ctx)
{
    (void)l, (void)ctx;
    if (is_leader)
        zkrl_vlog("leader (fencing token %" PRId64 ")", token);
    else
        zkrl_vlog("not leader");
    zkrl_event(ZKRL_EV_HOLD, is_leader ? (int)ZKR_HOLD_SAFE : (int)ZKR_HOLD_LOST);
}

static void on_state(zkr_client_t *c, zkr_state_t s, void *ctx)
{
    (void)c, (void)ctx;
    zkrl_vlog("connection: %s", zkr_state_name(s));
    zkrl_event(ZKRL_EV_CLIENT, (int)s);
}

/* ---- error codes --------------------------------------------------------------- */

static int exit_for(int rc)
{
    switch (rc) {
    case ZKR_ENOAUTH: return ZKRL_EX_NOPERM;
    case ZKR_EINVAL: return ZKRL_EX_USAGE;
    case ZKR_ECONNLOSS:
    case ZKR_ESESSIONLOST:
    case ZKR_ETIMEDOUT: return ZKRL_EX_UNAVAILABLE;
    default: return ZKRL_EX_SOFTWARE;
    }
}

/* ---- the lock, whatever its kind ----------------------------------------------- */

/* --leader: the latch, joined at once (its own thread creates the node). */
static int leader_new(tool_t *t)
{
    const zkrl_opts_t *o = &t->o;
    if (o->id) {
        t->id = strdup(o->id);
    } else {
        char host[256] = "localhost";
        gethostname(host, sizeof host - 1);
        host[sizeof host - 1] = '\0';
        if (asprintf(&t->id, "%s-%ld", host, (long)getpid()) < 0)
            t->id = NULL;
    }
    if (!t->id)
        return ZKR_ENOMEM;
    int rc = zkr_latch_new(&t->latch, t->c, o->path, t->id);
    if (rc == ZKR_OK)
        rc = zkr_latch_set_policy(t->latch, ZKR_LEADER_POLICY_SESSION);
    if (rc == ZKR_OK)
        rc = zkr_latch_set_listener(t->latch, on_leader, t);
    if (rc == ZKR_OK)
        rc = zkr_latch_start(t->latch);
    return rc;
}

static int lock_new(tool_t *t)
{
    const zkrl_opts_t *o = &t->o;
    int rc;
    switch (o->kind) {
    case ZKRL_LEADER:
        return leader_new(t);
    case ZKRL_READ:
    case ZKRL_WRITE:
        if ((rc = zkr_rwlock_new(&t->rw, t->c, o->path)) != ZKR_OK)
            return rc;
        t->ref = o->kind == ZKRL_READ ? zkr_rwlock_read_ref(t->rw) : zkr_rwlock_write_ref(t->rw);
        return zkr_rwlock_set_hold_listener(t->rw, on_hold, t);
    case ZKRL_SEMAPHORE:
    case ZKRL_SEMAPHORE_MUTEX:
        /* The semaphore mutex is a semaphore of one lease, node for node
         * (Curator's InterProcessSemaphoreMutex): one lease API serves
         * both. */
        if ((rc = zkr_semaphore_new(&t->sem, t->c, o->path, o->kind == ZKRL_SEMAPHORE ? o->leases : 1)) != ZKR_OK)
            return rc;
        return zkr_semaphore_set_hold_listener(t->sem, on_lease, t);
    default:
        if ((rc = zkr_mutex_new(&t->m, t->c, o->path)) != ZKR_OK)
            return rc;
        t->ref = zkr_mutex_ref(t->m);
        return zkr_mutex_set_hold_listener(t->m, on_hold, t);
    }
}

static int lock_acquire(tool_t *t, int64_t timeout_ms)
{
    if (t->latch) {
        int rc = zkr_latch_await(t->latch, timeout_ms);
        if (rc == ZKR_OK && zkr_latch_fencing_token(t->latch, &t->term_token) != ZKR_OK)
            rc = ZKR_ETIMEDOUT; /* led for an instant only: wait on */
        return rc;
    }
    if (t->sem)
        return zkr_semaphore_acquire(t->sem, timeout_ms, &t->lease);
    return zkr_lock_acquire(t->ref, timeout_ms);
}

/* Leadership as a hold: SAFE leading the same term, connected;
 * IN_DOUBT leading but not connected; LOST otherwise. */
static zkr_hold_state_t leader_state(tool_t *t)
{
    int64_t token = -1;
    if (!zkr_latch_has_leadership(t->latch) || zkr_latch_fencing_token(t->latch, &token) != ZKR_OK ||
        token != t->term_token)
        return ZKR_HOLD_LOST;
    return zkr_client_is_connected(t->c) ? ZKR_HOLD_SAFE : ZKR_HOLD_IN_DOUBT;
}

static zkr_hold_state_t lock_state(tool_t *t)
{
    if (t->latch)
        return leader_state(t);
    return t->sem ? zkr_lease_hold_state(t->lease) : zkr_lock_hold_state(t->ref);
}

static int64_t lock_token(tool_t *t)
{
    int64_t token = -1;
    if (t->latch)
        return t->term_token;
    int rc = t->sem ? zkr_lease_fencing_token(t->lease, &token) : zkr_lock_fencing_token(t->ref, &token);
    return rc == ZKR_OK ? token : -1;
}

/* Our node's full path (the caller's: zkr_free), or NULL if it cannot be
 * told. */
static char *lock_node(tool_t *t)
{
    char *node = NULL;
    int rc = t->latch ? zkr_latch_node_path(t->latch, &node)
             : t->sem ? zkr_lease_node_path(t->lease, &node)
                      : zkr_lock_node_path(t->ref, &node);
    return rc == ZKR_OK ? node : NULL;
}

static int lock_release(tool_t *t)
{
    if (!t->held)
        return ZKR_OK;
    t->held = 0;
    if (t->latch) /* leaving the election: the only way to give leadership up */
        return zkr_latch_close(t->latch, ZKR_LATCH_CLOSE_SILENT);
    if (t->sem) {
        zkr_lease_t *l = t->lease;
        t->lease = NULL;
        return zkr_lease_release(l);
    }
    return zkr_lock_release(t->ref);
}

static void lock_free(tool_t *t)
{
    zkr_latch_free(t->latch); /* leaves the election if still in it */
    t->latch = NULL;
    free(t->id);
    t->id = NULL;
    zkr_mutex_free(t->m);
    zkr_rwlock_free(t->rw);
    zkr_semaphore_free(t->sem);
    t->m = NULL;
    t->rw = NULL;
    t->sem = NULL;
}

/* ---- connecting and acquiring ------------------------------------------------------ */

/* Wait for a connection until deadline_ms (< 0: the connect timeout), in
 * slices, so that a signal is noticed.  0, or an exit code. */
static int wait_connected(tool_t *t, int64_t deadline_ms)
{
    if (deadline_ms < 0)
        deadline_ms = zkrt_now_ms() + t->o.connect_timeout_ms;
    for (;;) {
        int64_t left = deadline_ms - zkrt_now_ms();
        int rc = zkr_client_wait_connected(t->c, left < 0 ? 0 : (left < SLICE_MS ? left : SLICE_MS));
        int sig = zkrl_abort_signal();
        if (sig) {
            zkrl_err("interrupted by %s while connecting", zkrl_signame(sig));
            return 128 + sig;
        }
        if (rc == ZKR_OK)
            return 0;
        if (rc == ZKR_ENOAUTH) {
            zkrl_err("authentication refused by %s", t->o.hosts);
            return ZKRL_EX_NOPERM;
        }
        if (rc != ZKR_ETIMEDOUT) {
            zkrl_err("cannot connect to %s: %s", t->o.hosts, zkr_strerror(rc));
            return exit_for(rc);
        }
        if (zkrt_now_ms() >= deadline_ms)
            return ZKRL_EX_UNAVAILABLE;
    }
}

static int connect_client(tool_t *t)
{
    const zkrl_opts_t *o = &t->o;
    zkr_client_options_t opt;
    zkr_client_options_init(&opt);
    opt.session_timeout_ms = o->session_timeout_ms;
    opt.connect_timeout_ms = -1; /* connect in the background: see wait_connected */
    opt.chroot = o->chroot;
    opt.auth_scheme = o->auth_scheme;
    opt.auth_data = o->auth_data;
    opt.auth_data_len = o->auth_data ? (int)strlen(o->auth_data) : 0;
    opt.zk_log_level = 0; /* our own messages only */
    int rc = zkr_client_open(&t->c, o->hosts, &opt);
    if (rc != ZKR_OK) {
        zkrl_err("cannot open a ZooKeeper client for '%s': %s", o->hosts, zkr_strerror(rc));
        return exit_for(rc);
    }
    if ((rc = zkr_client_add_listener(t->c, on_state, t)) != ZKR_OK) {
        zkrl_err("cannot watch the connection: %s", zkr_strerror(rc));
        return ZKRL_EX_SOFTWARE;
    }
    int code = wait_connected(t, -1);
    if (code == ZKRL_EX_UNAVAILABLE)
        zkrl_err("cannot connect to %s within %.1f s", o->hosts, (double)o->connect_timeout_ms / 1000.0);
    if (code)
        return code;
    int64_t id = 0;
    int64_t negotiated = 0;
    zkr_client_session(t->c, &id, NULL);
    zkr_client_session_timeout(t->c, &negotiated);
    zkrl_vlog("connected to %s: session 0x%" PRIx64 ", timeout %" PRId64 " ms", o->hosts, (uint64_t)id, negotiated);
    return 0;
}

static int acquire(tool_t *t)
{
    const zkrl_opts_t *o = &t->o;
    int rc = lock_new(t);
    if (rc != ZKR_OK) {
        zkrl_err("cannot use lock %s: %s", o->path, zkr_strerror(rc));
        return exit_for(rc);
    }
    int64_t start = zkrt_now_ms();
    int64_t deadline = o->timeout_ms < 0 ? -1 : start + o->timeout_ms;
    zkrl_vlog("waiting for %s", o->path);
    for (;;) {
        int64_t left = deadline < 0 ? -1 : deadline - zkrt_now_ms();
        if (deadline >= 0 && left < 0)
            left = 0;
        int sig;
        if (t->latch) {
            /* no session to end: the latch would only join again; look
             * for a signal between slices instead */
            rc = lock_acquire(t, left < 0 || left > SLICE_MS ? SLICE_MS : left);
            sig = zkrl_abort_signal();
            if (rc == ZKR_ETIMEDOUT && !sig && (deadline < 0 || zkrt_now_ms() < deadline))
                continue;
        } else {
            zkrl_abort_arm(t->c, o->hosts);
            rc = lock_acquire(t, left);
            sig = zkrl_abort_disarm();
        }
        t->held = rc == ZKR_OK;
        if (sig) {
            lock_release(t);
            zkrl_err("interrupted by %s while waiting for %s", zkrl_signame(sig), o->path);
            return 128 + sig;
        }
        if (rc == ZKR_OK)
            return 0;
        if (rc == ZKR_ESESSIONLOST && (deadline < 0 || zkrt_now_ms() < deadline)) {
            zkrl_vlog("session lost while waiting: queueing again");
            int code = wait_connected(t, deadline < 0 ? zkrt_now_ms() + o->connect_timeout_ms : deadline);
            if (code == 0)
                continue;
            if (code != ZKRL_EX_UNAVAILABLE)
                return code;
            if (deadline < 0 || zkrt_now_ms() < deadline) {
                zkrl_err("lost the connection to %s while waiting for %s", o->hosts, o->path);
                return code;
            }
            rc = ZKR_ETIMEDOUT;
        }
        if (rc == ZKR_ETIMEDOUT || rc == ZKR_ESESSIONLOST) {
            if (o->timeout_ms == 0)
                zkrl_err(t->latch ? "%s has another leader" : "%s is held by another process", o->path);
            else
                zkrl_err(t->latch ? "leadership of %s not gained within %.1f s" : "%s not acquired within %.1f s",
                         o->path, (double)(zkrt_now_ms() - start) / 1000.0);
            return o->conflict_code;
        }
        if (rc == ZKR_ENONODE && o->chroot) {
            zkrl_err("cannot acquire %s: the chroot %s does not exist", o->path, o->chroot);
            return ZKRL_EX_USAGE;
        }
        zkrl_err("cannot acquire %s: %s", o->path, zkr_strerror(rc));
        return exit_for(rc);
    }
}

/* ---- running the command ------------------------------------------------------------ */

typedef struct watch {
    zkrl_child_t ch;
    int64_t doubt_since;  /* 0 when not in doubt */
    int64_t term_at;      /* when SIGTERM was sent, 0 if not */
    int killed;
    int unsafe;
    int client_lost;
    zkr_hold_state_t seen; /* --leader: the state last logged */
} watch_t;

/* Read the event pipe: forward signals, note a lost session. */
static void drain_events(watch_t *w)
{
    unsigned char b[64];
    ssize_t n;
    while ((n = read(zkrl_events_fd(), b, sizeof b)) > 0) {
        for (ssize_t i = 0; i + 1 < n; i += 2) {
            if (b[i] == ZKRL_EV_SIGNAL) {
                int sig = b[i + 1] & ~ZKRL_EV_FROM_TTY;
                if ((b[i + 1] & ZKRL_EV_FROM_TTY) && !w->ch.own_group) {
                    zkrl_vlog("%s from the terminal: the command has it too", zkrl_signame(sig));
                    continue;
                }
                zkrl_vlog("%s: passing it to the command", zkrl_signame(sig));
                zkrl_child_signal(&w->ch, sig);
            } else if (b[i] == ZKRL_EV_CLIENT && b[i + 1] == ZKR_STATE_LOST) {
                w->client_lost = 1;
            }
        }
    }
}

/* Decide from the hold's state; the poll timeout until the next decision. */
static int check_hold(tool_t *t, watch_t *w)
{
    int64_t now = zkrt_now_ms();
    int timeout = SLICE_MS;
    if (w->unsafe) {
        if (!w->killed && now - w->term_at >= t->o.kill_after_ms) {
            zkrl_vlog("the command is still running: SIGKILL");
            zkrl_child_signal(&w->ch, SIGKILL);
            w->killed = 1;
        } else if (!w->killed && w->term_at + t->o.kill_after_ms - now < timeout) {
            timeout = (int)(w->term_at + t->o.kill_after_ms - now);
        }
        return timeout;
    }
    zkr_hold_state_t s = lock_state(t);
    if (t->latch && s != w->seen) { /* (a lock's hold listener logs its own) */
        zkrl_vlog("leadership of %s: %s", t->o.path, zkr_hold_state_name(s));
        w->seen = s;
    }
    if (s == ZKR_HOLD_LOST || s == ZKR_HOLD_NONE || w->client_lost) {
        if (t->latch)
            zkrl_err("lost leadership of %s: stopping the command", t->o.path);
        else
            zkrl_err("lost the lock on %s (session gone): stopping the command", t->o.path);
        w->unsafe = 1;
    } else if (s == ZKR_HOLD_IN_DOUBT) {
        if (!w->doubt_since)
            w->doubt_since = now;
        int64_t left = w->doubt_since + t->o.grace_ms - now;
        if (left <= 0) {
            zkrl_err("%s %s is in doubt (connection lost) for %.1f s: stopping the command",
                     t->latch ? "leadership of" : "the hold on", t->o.path, (double)(now - w->doubt_since) / 1000.0);
            w->unsafe = 1;
        } else if (left < timeout) {
            timeout = (int)left;
        }
    } else {
        w->doubt_since = 0;
    }
    if (w->unsafe) {
        zkrl_child_signal(&w->ch, SIGTERM);
        w->term_at = now;
        timeout = 0;
    }
    return timeout;
}

static int run_command(tool_t *t, const sigset_t *mask)
{
    const zkrl_opts_t *o = &t->o;
    int64_t token = lock_token(t);
    char *node = lock_node(t);
    char *env[5] = {NULL, NULL, NULL, NULL, NULL};
    if (asprintf(&env[0], "ZKR_LOCK_PATH=%s", o->path) < 0 ||
        asprintf(&env[1], "ZKR_LOCK_NODE=%s", node ? node : "") < 0 ||
        asprintf(&env[2], "ZKR_FENCING_TOKEN=%" PRId64, token) < 0 ||
        (t->latch && asprintf(&env[3], "ZKR_LEADER_ID=%s", t->id) < 0)) {
        zkrl_err("out of memory");
        zkr_free(node);
        for (int i = 0; i < 4; i++)
            free(env[i]);
        return ZKRL_EX_SOFTWARE;
    }
    zkrl_vlog("acquired %s: node %s, fencing token %" PRId64, o->path, node ? node : "?", token);
    zkr_free(node);

    watch_t w;
    memset(&w, 0, sizeof w);
    w.seen = ZKR_HOLD_SAFE; /* as acquired */
    int code = zkrl_spawn(&w.ch, o->argv, env, mask);
    for (int i = 0; i < 4; i++)
        free(env[i]);
    if (code)
        return code;
    zkrl_vlog("started %s (pid %ld)", o->argv[0], (long)w.ch.pid);

    int signo = 0;
    for (;;) {
        drain_events(&w);
        if (zkrl_child_reap(&w.ch, &code, &signo))
            break;
        int timeout = check_hold(t, &w);
        struct pollfd p = {zkrl_events_fd(), POLLIN, 0};
        if (poll(&p, 1, timeout) < 0 && errno != EINTR) {
            /* keep supervising, never leave the child: just not too fast */
            zkrl_vlog("poll: %s", strerror(errno));
            struct timespec ts = {0, SLICE_MS * 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    if (signo)
        zkrl_vlog("the command was killed by %s", zkrl_signame(signo));
    else
        zkrl_vlog("the command exited with %d", code);
    if (w.unsafe)
        return ZKRL_EX_LOST;
    drain_events(&w);
    if (lock_state(t) == ZKR_HOLD_LOST || w.client_lost) {
        zkrl_err(t->latch ? "lost leadership of %s while the command ran"
                          : "lost the lock on %s (session gone) while the command ran", o->path);
        return ZKRL_EX_LOST;
    }
    return code;
}

/* ---- main ------------------------------------------------------------------------- */

static int run(tool_t *t, const sigset_t *mask)
{
    int code = connect_client(t);
    if (code)
        return code;
    if (t->o.print)
        return zkrl_print(&t->o, t->c);
    code = acquire(t);
    if (code)
        return code;
    code = run_command(t, mask);
    int rc = lock_release(t);
    if (rc == ZKR_OK)
        zkrl_vlog("released %s", t->o.path);
    else if (rc != ZKR_ELOST)
        zkrl_err("release of %s: %s", t->o.path, zkr_strerror(rc));
    return code;
}

int main(int argc, char **argv)
{
    tool_t t;
    memset(&t, 0, sizeof t);
    zkrl_fds_snapshot();
    int code = zkrl_parse(&t.o, argc, argv);
    if (code >= 0) {
        zkrl_opts_free(&t.o);
        return code;
    }
    zkrl_log_init(t.o.verbose, t.o.quiet);
    sigset_t mask;
    zkrl_signals_block(&mask); /* before any thread starts: all inherit it */
    if (zkrl_events_open() != 0 || zkrl_signals_start() != 0) {
        zkrl_err("cannot start: %s", strerror(errno));
        zkrl_opts_free(&t.o);
        return ZKRL_EX_SOFTWARE;
    }
    code = run(&t, &mask);
    lock_release(&t);
    lock_free(&t);
    zkr_client_close(t.c); /* the session ends: nothing of ours is left */
    zkrl_signals_stop();
    zkrl_events_close();
    zkrl_opts_free(&t.o);
    return code;
}

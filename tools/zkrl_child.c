/* zkr-lock: the child process, the event pipe and the signal thread.
 *
 * Nothing here decides anything: the listeners and the signal thread only
 * record what happened and write it to the event pipe; the main thread reads
 * the pipe and acts.  The one exception is the abort while waiting for the
 * lock: the library has no way to cancel a blocked acquire, so the signal
 * thread ends the client's session from outside (a second handle on the same
 * session, closed), which makes the acquire return ZKR_ESESSIONLOST and
 * removes whatever node the waiter had. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tools/zkrl.h"

extern char **environ;

/* ---- the event pipe ------------------------------------------------------------ */

static int ev_pipe[2] = {-1, -1};

int zkrl_events_open(void)
{
    if (pipe2(ev_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
        return -1;
    return 0;
}

int zkrl_events_fd(void)
{
    return ev_pipe[0];
}

void zkrl_event(int type, int value)
{
    unsigned char b[2] = {(unsigned char)type, (unsigned char)value};
    /* Atomic (< PIPE_BUF); if the pipe is full the main thread is far
     * behind and polls the states anyway. */
    ssize_t n = write(ev_pipe[1], b, sizeof b);
    (void)n;
}

void zkrl_events_close(void)
{
    for (int i = 0; i < 2; i++) {
        if (ev_pipe[i] >= 0)
            close(ev_pipe[i]);
        ev_pipe[i] = -1;
    }
}

/* ---- the signal thread ------------------------------------------------------------ */

static sigset_t watched;
static pthread_t sig_thread;
static int sig_started;
static atomic_int sig_stop;
static atomic_int first_stop_sig; /* first INT/TERM/HUP seen, 0 if none */

static pthread_mutex_t abort_mu = PTHREAD_MUTEX_INITIALIZER;
static zkr_client_t *abort_client; /* armed while not NULL */
static const char *abort_hosts;
static int abort_sig;
static int session_ended;
static int64_t next_try_ms;

void zkrl_signals_block(sigset_t *old)
{
    sigemptyset(&watched);
    sigaddset(&watched, SIGINT);
    sigaddset(&watched, SIGTERM);
    sigaddset(&watched, SIGHUP);
    sigaddset(&watched, SIGCHLD);
    pthread_sigmask(SIG_BLOCK, &watched, old);
}

/* Open a handle on the client's session and close it: the server ends the
 * session.  1 if the session is gone, 0 to try again later.  abort_mu held. */
static int end_session_locked(void)
{
    clientid_t cid;
    memset(&cid, 0, sizeof cid);
    if (zkr_client_session(abort_client, &cid.client_id, cid.passwd) != ZKR_OK)
        return 0; /* no session yet: nothing on the server to remove */
    zhandle_t *zh = zookeeper_init(abort_hosts, zkrl_noop_watcher, 4000, &cid, NULL, 0);
    if (!zh)
        return 0;
    int st = zkrl_zh_wait(zh, 2000);
    zookeeper_close(zh); /* connected: this closes the session */
    return st == ZOO_CONNECTED_STATE || st == ZOO_EXPIRED_SESSION_STATE;
}

static void *signal_main(void *arg)
{
    (void)arg;
    while (!atomic_load(&sig_stop)) {
        struct timespec ts = {0, 100 * 1000000L};
        siginfo_t info;
        int s = sigtimedwait(&watched, &info, &ts);
        if (s == SIGCHLD) {
            zkrl_event(ZKRL_EV_CHILD, 0);
        } else if (s > 0) {
            int zero = 0;
            atomic_compare_exchange_strong(&first_stop_sig, &zero, s);
            /* from the terminal (^C): its foreground group got it too */
            zkrl_event(ZKRL_EV_SIGNAL, s | (info.si_code == SI_KERNEL ? ZKRL_EV_FROM_TTY : 0));
            pthread_mutex_lock(&abort_mu);
            if (abort_client && !abort_sig)
                abort_sig = s;
            pthread_mutex_unlock(&abort_mu);
        }
        pthread_mutex_lock(&abort_mu);
        if (abort_client && abort_sig && !session_ended && zkrt_now_ms() >= next_try_ms) {
            zkrl_vlog("%s while waiting: ending the session", zkrl_signame(abort_sig));
            session_ended = end_session_locked();
            next_try_ms = zkrt_now_ms() + 200;
        }
        pthread_mutex_unlock(&abort_mu);
    }
    return NULL;
}

int zkrl_signals_start(void)
{
    if (pthread_create(&sig_thread, NULL, signal_main, NULL) != 0)
        return -1;
    sig_started = 1;
    return 0;
}

void zkrl_signals_stop(void)
{
    if (!sig_started)
        return;
    atomic_store(&sig_stop, 1);
    pthread_join(sig_thread, NULL);
    sig_started = 0;
}

void zkrl_abort_arm(zkr_client_t *c, const char *hosts)
{
    pthread_mutex_lock(&abort_mu);
    abort_client = c;
    abort_hosts = hosts;
    abort_sig = atomic_load(&first_stop_sig);
    session_ended = 0;
    next_try_ms = 0;
    pthread_mutex_unlock(&abort_mu);
}

int zkrl_abort_disarm(void)
{
    pthread_mutex_lock(&abort_mu);
    abort_client = NULL;
    int s = abort_sig;
    pthread_mutex_unlock(&abort_mu);
    return s;
}

int zkrl_abort_signal(void)
{
    return atomic_load(&first_stop_sig);
}

/* ---- the child --------------------------------------------------------------------- */

/* The descriptors zkr-lock was started with: the command gets those (as
 * flock passes them on), and none of the ones opened since (the ZooKeeper
 * C client's socket and pipe are not close-on-exec). */
#define MAX_KEEP 1024
static int keep_fds[MAX_KEEP + 1];
static int n_keep;

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

void zkrl_fds_snapshot(void)
{
    n_keep = 0;
    DIR *d = opendir("/proc/self/fd");
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) && n_keep < MAX_KEEP) {
            char *end;
            long fd = strtol(e->d_name, &end, 10);
            if (*end == '\0' && end != e->d_name && fd != dirfd(d) && fd >= 0 && fd <= INT_MAX)
                keep_fds[n_keep++] = (int)fd;
        }
        closedir(d);
    } else {
        for (int fd = 0; fd < MAX_KEEP; fd++) {
            if (fcntl(fd, F_GETFD) != -1)
                keep_fds[n_keep++] = fd;
        }
    }
    qsort(keep_fds, (size_t)n_keep, sizeof keep_fds[0], cmp_int);
}

/* Close [first, last]; close() one by one up to max_fd if the kernel has no
 * close_range.  Async-signal-safe. */
static void close_span(unsigned first, unsigned last, long max_fd)
{
    if (close_range(first, last, 0) == 0 || errno != ENOSYS)
        return;
    for (long fd = first; fd <= (long)last && fd < max_fd; fd++)
        close((int)fd);
}

/* In the child (async-signal-safe): close every descriptor above 2 that is
 * not in keep[] (sorted, with the exec status pipe added). */
static void close_new_fds(const int *keep, int n, long max_fd)
{
    unsigned first = 3;
    for (int i = 0; i < n; i++) {
        if (keep[i] < (int)first)
            continue;
        if ((unsigned)keep[i] > first)
            close_span(first, (unsigned)keep[i] - 1, max_fd);
        first = (unsigned)keep[i] + 1;
    }
    close_span(first, ~0U, max_fd);
}

/* environ without the names set by add, then add; NULL on ENOMEM. */
static char **child_env(char **add)
{
    size_t ne = 0, na = 0;
    while (environ && environ[ne])
        ne++;
    while (add[na])
        na++;
    char **env = calloc(ne + na + 1, sizeof *env);
    if (!env)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < ne; i++) {
        int replaced = 0;
        for (size_t j = 0; j < na && !replaced; j++) {
            size_t len = (size_t)(strchr(add[j], '=') - add[j]) + 1;
            replaced = strncmp(environ[i], add[j], len) == 0;
        }
        if (!replaced)
            env[k++] = environ[i];
    }
    for (size_t j = 0; j < na; j++)
        env[k++] = add[j];
    return env;
}

int zkrl_spawn(zkrl_child_t *ch, char **argv, char **env_add, const sigset_t *mask)
{
    char **env = child_env(env_add);
    int p[2];
    if (!env || pipe2(p, O_CLOEXEC) != 0) {
        free(env);
        zkrl_err("cannot start %s: %s", argv[0], strerror(errno));
        return ZKRL_EX_SOFTWARE;
    }
    int keep[MAX_KEEP + 1], nk = 0;
    for (int i = 0; i < n_keep; i++)
        if (keep_fds[i] != p[1])
            keep[nk++] = keep_fds[i];
    keep[nk++] = p[1];
    qsort(keep, (size_t)nk, sizeof keep[0], cmp_int);
    long max_fd = sysconf(_SC_OPEN_MAX);
    /* In a terminal's foreground the command stays in our process group so
     * that it can use the terminal; otherwise (cron, scripts) it leads a
     * group of its own and signals reach everything it started. */
    ch->own_group = !(isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp());
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        if (ch->own_group)
            setpgid(0, 0);
        /* if zkr-lock dies, the command must not run on unprotected */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
            _exit(ZKRL_EX_SOFTWARE);
        pthread_sigmask(SIG_SETMASK, mask, NULL);
        close_new_fds(keep, nk, max_fd > 0 ? max_fd : 65536);
        execvpe(argv[0], argv, env);
        int e = errno;
        ssize_t n = write(p[1], &e, sizeof e);
        (void)n;
        _exit(e == ENOENT || e == ENOTDIR ? ZKRL_EX_NOTFOUND : ZKRL_EX_NOEXEC);
    }
    int fork_errno = errno;
    free(env);
    close(p[1]);
    if (pid < 0) {
        close(p[0]);
        zkrl_err("cannot start %s: %s", argv[0], strerror(fork_errno));
        return ZKRL_EX_SOFTWARE;
    }
    ch->pid = pid;
    if (ch->own_group)
        setpgid(pid, pid); /* also here: no window where it is not yet done */
    int e = 0;
    ssize_t n;
    while ((n = read(p[0], &e, sizeof e)) < 0 && errno == EINTR) {
    }
    close(p[0]);
    if (n != (ssize_t)sizeof e)
        return 0; /* exec succeeded (the pipe closed on exec) */
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    ch->pid = 0;
    if (e == ENOENT || e == ENOTDIR) {
        zkrl_err("%s: command not found", argv[0]);
        return ZKRL_EX_NOTFOUND;
    }
    zkrl_err("%s: cannot execute: %s", argv[0], strerror(e));
    return ZKRL_EX_NOEXEC;
}

void zkrl_child_signal(const zkrl_child_t *ch, int sig)
{
    if (ch->pid <= 0)
        return;
    if (ch->own_group && kill(-ch->pid, sig) == 0)
        return;
    kill(ch->pid, sig);
}

int zkrl_child_reap(zkrl_child_t *ch, int *code, int *signo)
{
    if (ch->pid <= 0)
        return 0;
    int st = 0;
    pid_t r;
    while ((r = waitpid(ch->pid, &st, WNOHANG)) < 0 && errno == EINTR) {
    }
    if (r == 0)
        return 0;
    ch->pid = 0;
    *signo = 0;
    if (r < 0) {
        *code = ZKRL_EX_SOFTWARE;
    } else if (WIFEXITED(st)) {
        *code = WEXITSTATUS(st);
    } else {
        *signo = WTERMSIG(st);
        *code = 128 + *signo;
    }
    return 1;
}

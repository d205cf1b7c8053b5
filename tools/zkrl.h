/* zkr-lock: shared declarations of the command-line tool's parts.
 *
 *   zkr-lock.c      main: connect, acquire, run the command, release
 *   zkrl_opts.c     command line, --help, messages and exit codes
 *   zkrl_child.c    the child process and the signal thread
 *   zkrl_print.c    --print, and the raw ZooKeeper handle it needs
 *   zkrt.c          what it shares with zkr-cache (tools/zkrt.h)
 *
 * The tool uses the library's public API only (<zkr/zkr.h>); a plain
 * ZooKeeper handle is opened where the API gives no answer (the session
 * and czxid of other processes' nodes). */
#ifndef ZKRL_H
#define ZKRL_H

#include <signal.h>
#include <stdint.h>
#include <sys/types.h>
#include <zookeeper/zookeeper.h>

#include <zkr/zkr.h>

#include "tools/zkrt.h" /* shared with zkr-cache: escaping, numbers, paths, clock */

/* Exit codes of zkr-lock itself (documented in --help and zkr-lock.1).  The
 * command's own status is passed through otherwise. */
enum {
    ZKRL_EX_CONFLICT = 1,    /* default of --conflict-exit-code */
    ZKRL_EX_USAGE = 64,      /* bad usage (sysexits EX_USAGE) */
    ZKRL_EX_UNAVAILABLE = 69, /* cannot connect (EX_UNAVAILABLE) */
    ZKRL_EX_SOFTWARE = 70,   /* internal error (EX_SOFTWARE) */
    ZKRL_EX_LOST = 75,       /* hold lost or in doubt past --grace (EX_TEMPFAIL) */
    ZKRL_EX_NOPERM = 77,     /* authentication or ACL refused (EX_NOPERM) */
    ZKRL_EX_NOEXEC = 126,    /* command found but not executable */
    ZKRL_EX_NOTFOUND = 127   /* command not found */
};

typedef enum zkrl_kind {
    ZKRL_MUTEX = 0,
    ZKRL_READ,
    ZKRL_WRITE,
    ZKRL_SEMAPHORE,
    ZKRL_SEMAPHORE_MUTEX,
    ZKRL_LEADER              /* a leader election (Curator LeaderLatch) */
} zkrl_kind_t;

typedef struct zkrl_opts {
    const char *hosts;
    const char *chroot;
    char *auth_scheme;       /* malloc'd, or NULL */
    char *auth_data;         /* malloc'd, or NULL; never printed */
    int session_timeout_ms;
    int64_t connect_timeout_ms;
    int64_t timeout_ms;      /* < 0: forever */
    int64_t grace_ms;
    int64_t kill_after_ms;
    int conflict_code;
    zkrl_kind_t kind;
    int leases;              /* --semaphore N */
    const char *id;          /* --id: the participant id (--leader) */
    int print;
    int verbose;
    int quiet;
    const char *path;
    char **argv;             /* the command, NULL-terminated */
} zkrl_opts_t;

/* ---- zkrl_opts.c ---- */

/* Parse the command line.  Returns -1 to go on, else the exit code (0 after
 * --help/--version, ZKRL_EX_USAGE after a usage error, already reported). */
int zkrl_parse(zkrl_opts_t *o, int argc, char **argv);
void zkrl_opts_free(zkrl_opts_t *o);
/* The verbosity of messages: set once by main. */
void zkrl_log_init(int verbose, int quiet);
/* "zkr-lock: <message>" on stderr, one line (unless --quiet). */
void zkrl_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A timestamped line on stderr, with --verbose only. */
void zkrl_vlog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "SIGTERM" (thread-local buffer). */
const char *zkrl_signame(int sig);

/* ---- zkrl_child.c ---- */

typedef struct zkrl_child {
    pid_t pid;
    int own_group; /* the child leads a process group of its own */
} zkrl_child_t;

/* Note the descriptors open at start (call first): only those are passed
 * on to the command. */
void zkrl_fds_snapshot(void);
/* Start argv[0] with the extra variables env_add ("NAME=value", NULL
 * terminated) added to the environment, and the signal mask `mask`.
 * Returns 0 (started), or ZKRL_EX_NOTFOUND / ZKRL_EX_NOEXEC /
 * ZKRL_EX_SOFTWARE (reported). */
int zkrl_spawn(zkrl_child_t *ch, char **argv, char **env_add, const sigset_t *mask);
/* Send sig to the child (its whole group if it has one). */
void zkrl_child_signal(const zkrl_child_t *ch, int sig);
/* Reap without waiting: 1 and *code (exit status, 128+signal) if it ended. */
int zkrl_child_reap(zkrl_child_t *ch, int *code, int *signo);

/* Events written to the event pipe, two bytes each: a type and a value. */
enum { ZKRL_EV_SIGNAL = 'S', ZKRL_EV_HOLD = 'H', ZKRL_EV_CLIENT = 'C', ZKRL_EV_CHILD = 'X' };
/* Or'ed into a signal event's value: sent by the terminal, so a command in
 * our own process group has it already. */
#define ZKRL_EV_FROM_TTY 0x80
/* The pipe that the listeners and the signal thread write to (read end in
 * ev_rd); 0 or -1. */
int zkrl_events_open(void);
int zkrl_events_fd(void);
void zkrl_event(int type, int value);
void zkrl_events_close(void);

/* The signal thread: waits for SIGINT/SIGTERM/SIGHUP/SIGCHLD (blocked in
 * every thread: zkrl_signals_block is called before any thread starts) and
 * turns them into events.  While the main thread waits for the lock, the
 * first of INT/TERM/HUP ends the client's session from outside so that the
 * acquire returns (see zkrl_abort_*). */
void zkrl_signals_block(sigset_t *old);
int zkrl_signals_start(void);
void zkrl_signals_stop(void);
/* Phases seen by the signal thread. */
void zkrl_abort_arm(zkr_client_t *c, const char *hosts); /* waiting: abortable */
/* Leave the abortable phase; returns the signal that aborted it, or 0. */
int zkrl_abort_disarm(void);
/* The signal that asked to stop while waiting, or 0. */
int zkrl_abort_signal(void);

/* ---- zkrl_print.c ---- */

/* A ZooKeeper watcher that ignores everything. */
void zkrl_noop_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx);
/* Wait (bounded) until zh is connected, expired or refused: its state. */
int zkrl_zh_wait(zhandle_t *zh, int64_t timeout_ms);
/* A plain handle on hosts (+ chroot), connected within the connect
 * timeout, authenticated as the options say; NULL. */
zhandle_t *zkrl_raw_open(const zkrl_opts_t *o);
/* --print: returns the exit code. */
int zkrl_print(const zkrl_opts_t *o, zkr_client_t *c);

#endif

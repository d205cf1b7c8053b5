/* Shared helpers for the CUnit suites that run against a real server
 * started by with-zk.sh. */
#ifndef ZKR_TEST_H
#define ZKR_TEST_H

#include <CUnit/Basic.h>
#include <stdint.h>
#include <sys/types.h>
#include <zookeeper/zookeeper.h>

#include "zkr/zkr.h"

/* Connection string of the test server (ZKR_TEST_HOSTS). */
const char *zkt_hosts(void);
/* Run "zkserver.sh CMD <test server dir>"; returns its exit status. */
int zkt_server(const char *cmd);
/* Malloc'd answer to a four-letter word, or NULL. */
char *zkt_4lw(const char *word);
/* A fresh path "/zkr-test/<name>-<pid>-<n>" (static buffer per call slot:
 * copy it if you need several at once). */
const char *zkt_path(const char *name, char *buf, size_t len);
/* Open a client with a short session timeout; asserts success. */
zkr_client_t *zkt_client(int session_timeout_ms);
/* The same through another connection string (a proxy); asserts success. */
zkr_client_t *zkt_client_at(const char *hosts, int session_ms);
/* The test server's port (for a proxy in front of it). */
int zkt_server_port(void);
/* A raw ZooKeeper handle for checking what is on the server. */
zhandle_t *zkt_raw(void);
/* The same on another server or ensemble (a connection string). */
zhandle_t *zkt_raw_at(const char *hosts);
void zkt_raw_close(zhandle_t *zh);
/* Number of children of path (0 if it does not exist), -1 on error. */
int zkt_count_children(zhandle_t *zh, const char *path);
/* Wait up to timeout_ms until `path` has exactly n children; 1 if it did. */
int zkt_wait_children(zhandle_t *zh, const char *path, int n, int timeout_ms);
/* Wait up to timeout_ms until `path` does not exist; 1 if so. */
int zkt_wait_gone(zhandle_t *zh, const char *path, int timeout_ms);
/* A zkt_wait_for condition: the atomic_int at arg is above zero. */
int zkt_flag_set(void *arg);
/* A watcher that ignores everything (for raw handles). */
void zkt_noop_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx);
/* End client c's session from outside (a second handle on it, closed) and
 * wait until c runs on a new session; retries (bounded) if c reconnects
 * first and takes the session back.  Fails the test (fatal) otherwise. */
void zkt_expire_client(zkr_client_t *c, int session_ms);
/* Sleep ms milliseconds. */
void zkt_sleep_ms(int ms);
int64_t zkt_now_ms(void);
/* Wait up to timeout_ms for cond() to become true (polling). */
int zkt_wait_for(int (*cond)(void *), void *arg, int timeout_ms);
/* Sessions watching `path` per the server's wchp report; -1 on error.
 * ZooKeeper 3.8's wchp/wchc/wchs list DATA watches only: a children watch
 * shows only in mntr's zk_watch_count (so count children watches as
 * zk_watch_count minus the wchs total). */
int zkt_watches_on(const char *path);
int zkt_watch_count_on_exact(const char *path);
/* Every node a recipe creates is data-watched by its own session (to see
 * an outside deletion at once): the counts above leave that watch out, so
 * they count waiters.  The session that owns `path` (0 for none). */
int64_t zkt_owner_of(const char *path);
/* Sessions watching exactly `path` in a wchp report: own = 0 those other
 * than its owner (stored in out, up to max), own = 1 its owner only.
 * Returns how many; -1 on error. */
int zkt_watch_report_sessions(const char *report, const char *path, int own, int64_t *out, int max);
/* Waiters' data watches (owners' own left out) on dir or anything below it,
 * in a wchp report or the server's current one; -1 on error. */
int zkt_report_waiter_watches_under(const char *report, const char *dir);
int zkt_waiter_watches_under(const char *dir);
/* 1 if the owner of `path` watches it, 0 if not, -1 on error. */
int zkt_owner_watches(const char *path);
/* The child of dir made last (the largest 10-digit sequence suffix), as a
 * full path in out: 1, or 0 (no such child, listing failed, too long). */
int zkt_newest_child(zhandle_t *zh, const char *dir, char *out, size_t len);

/* End session `id` from outside: open a second handle on it and close it,
 * until a handle on it is told the session has expired (the owner may
 * reconnect first and keep the session alive: then try again).  Returns 0
 * when the session is gone, -1 otherwise (bounded: a few attempts). */
int zkt_expire_session(int64_t id, const char passwd[16]);
/* The same through another server or ensemble. */
int zkt_expire_session_at(const char *hosts, int64_t id, const char passwd[16]);

/* A client for code that must not use CUnit (threads, forked children);
 * NULL on failure.  CUnit is not thread-safe, and a fatal assert jumps
 * from the thread it fails on: threads record, the main thread asserts. */
zkr_client_t *zkt_plain_client(int session_ms);
/* zkt_raw for the same code: NULL if it could not connect. */
zhandle_t *zkt_plain_raw(void);
/* The same on another server or ensemble. */
zhandle_t *zkt_plain_raw_at(const char *hosts);
/* A "key<TAB>value" line of mntr, or "Total watches:N" of wchs; -1 if
 * absent. */
long long zkt_stat_value(const char *word, const char *key);
/* Children watches on the whole server: mntr zk_watch_count minus the data
 * watches of wchs; -1 if it could not be told. */
long long zkt_children_watches(void);
/* Wait (bounded) for a child process: its exit status, 128+signal, or -1
 * if it had to be killed. */
int zkt_wait_child(pid_t pid, int timeout_ms);
/* The first 256 KiB of the file at path, NUL-terminated (malloc'd; "" if
 * it cannot be read): an example's output. */
char *zkt_slurp(const char *path);
/* Read one byte within timeout_ms: the byte, or -1. */
int zkt_read_byte(int fd, int timeout_ms);
/* A random pause of up to max_us (none half of the time). */
void zkt_jitter(unsigned *seed, int max_us);

/* Add the suites via add(), run them verbosely, return the process exit
 * status (0 only if every test passed). */
int zkt_main(const char *name, void (*add)(void));

#endif

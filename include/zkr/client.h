/* zkr_client: one ZooKeeper session shared by every lock of a process.
 *
 * The client owns the ZooKeeper handle, follows the session through
 * disconnects and expiry, and reports Curator-style connection states to
 * listeners.  After a session is LOST the client opens a new session by
 * itself and reports RECONNECTED when it is up.
 *
 * Threads (the one place that says which thread runs what):
 *  - Every function may be called from any thread, callbacks included.
 *  - Each client has two threads of its own.  The client thread keeps the
 *    session: connection states, the LOST timer, a new session after LOST,
 *    hold states, and every acquire's requests, deadline and end.  It
 *    never runs the program's code (except zkr_log_fn).
 *  - The callback thread runs every callback of the client, one at a
 *    time, in the order the events happened: connection-state listeners
 *    (in registration order), hold listeners (zkr_hold_fn, zkr_lease_fn),
 *    leadership listeners (zkr_latch_fn, zkr_selector_fn), observers, revocation requests, and
 *    completions in ZKR_DISPATCH_THREAD mode (zkr/async.h).  A selector's
 *    take-leadership function runs on the selector's own thread.
 *  - So a callback may call any library function, blocking ones with any
 *    timeout included (an acquire, zkr_client_wait_connected): a slow or
 *    blocked callback delays only the callbacks after it, never a state, a
 *    timer, a new session, nor a hold's state as zkr_*_hold_state reads it
 *    (a hold listener is told each state in its turn, a doubt already
 *    passed included: IN_DOUBT, then SAFE).
 *  - The calls that cannot work from a callback return ZKR_EDEADLK at
 *    once: zkr_client_close on its own client, zkr_selector_close from the
 *    selector's own callback or listener (and zkr_*_free of an object from
 *    its own listener leaves it, logging an error).
 *  - zkr_log_fn is the exception: see there.
 * Every call that takes a timeout returns within it (plus at most 100 ms
 * for answers in flight), whatever the link does; what a late answer
 * makes on the server is deleted in the background. */
#ifndef ZKR_CLIENT_H
#define ZKR_CLIENT_H

#include "zkr/common.h"
#include "zkr/errors.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zkr_client zkr_client_t;

/* Connection states, as Curator's ConnectionState. */
typedef enum zkr_state {
    ZKR_STATE_LATENT = 0,      /* never connected yet (not reported) */
    ZKR_STATE_CONNECTED = 1,   /* first connection of this client (once) */
    ZKR_STATE_SUSPENDED = 2,   /* connection lost; the session may survive */
    ZKR_STATE_RECONNECTED = 3, /* connected again (same or new session) */
    ZKR_STATE_LOST = 4,        /* session expired, or SUSPENDED for a whole
                                  negotiated session timeout */
    ZKR_STATE_READ_ONLY = 5,   /* connected to a read-only server */
    ZKR_STATE_CLOSED = 6       /* zkr_client_close was called (not reported) */
} zkr_state_t;

/* "CONNECTED", "SUSPENDED", ... ; "UNKNOWN" for out-of-range values. */
ZKR_EXTERN const char *zkr_state_name(zkr_state_t state);

/* Permissions of an ACL entry (ZooKeeper's bits). */
#define ZKR_PERM_READ 1
#define ZKR_PERM_WRITE 2
#define ZKR_PERM_CREATE 4
#define ZKR_PERM_DELETE 8
#define ZKR_PERM_ADMIN 16
#define ZKR_PERM_ALL 31

/* One ACL entry: permissions for an identity, e.g. {ZKR_PERM_ALL, "digest",
 * "app:<base64 sha1 of app:password>"} or {ZKR_PERM_READ, "world",
 * "anyone"}. */
typedef struct zkr_acl {
    int32_t perms;
    const char *scheme;
    const char *id;
} zkr_acl_t;

/* The ACL recipes put on every node and parent they create (Curator's
 * ACLProvider).  Existing nodes keep theirs: ZooKeeper checks a node's
 * CREATE/DELETE rights on its parent, so a lock directory made under
 * ZKR_ACL_CREATOR_ALL admits only its creator's identity. */
typedef enum zkr_acl_mode {
    ZKR_ACL_OPEN = 0,        /* anyone may do anything (the default, as Curator) */
    ZKR_ACL_CREATOR_ALL = 1, /* only the authenticated identity that created
                                the node: processes sharing that identity
                                share the locks; any other session, or none,
                                gets ZKR_ENOAUTH from every recipe call and
                                cannot delete, write (revoke) or queue.
                                Needs auth_scheme.  Trade-off: only that
                                identity can clean such nodes up by hand. */
    ZKR_ACL_CUSTOM = 2       /* the entries in acl[0 .. acl_count) */
} zkr_acl_mode_t;

/* Log levels (as the ZooKeeper C client's). */
#define ZKR_LOG_ERROR 1
#define ZKR_LOG_WARN 2
#define ZKR_LOG_INFO 3
#define ZKR_LOG_DEBUG 4

/* A log line of client c: `source` is "zkrecipes" (the library's own:
 * background deletes given up, refused deletes, credentials refused,
 * session rebuilds, holds lost to an outside deletion) or "zookeeper" (the
 * ZooKeeper C client's lines for this client's handles).  Called on any of
 * the library's or the C client's threads, possibly with a library lock
 * held: keep it short and thread-safe, and do not call into the library. */
typedef void (*zkr_log_fn)(zkr_client_t *c, int level, const char *source, const char *message,
                           void *ctx);

/* Session timeouts zkr_client_open accepts (ms); 0 means the default. */
#define ZKR_SESSION_TIMEOUT_MIN_MS 1000
#define ZKR_SESSION_TIMEOUT_MAX_MS 600000

/* Options for zkr_client_open.  Always fill with zkr_client_options_init
 * first, then set fields: it records the struct's size as the program was
 * built (a macro passing sizeof), so a later library that appends fields
 * reads only what the program's struct has and gives the other fields
 * their defaults, and a program built against a newer header is told
 * (ZKR_EINVAL) instead of being misread.  New fields are only ever
 * appended.  (0.1.0 had no size field: programs built against it must be
 * rebuilt.) */
typedef struct zkr_client_options {
    /* sizeof(zkr_client_options_t) as the program was built: set by
     * zkr_client_options_init, never by hand. */
    size_t size;
    /* Requested session timeout, 0 or ZKR_SESSION_TIMEOUT_MIN_MS ..
     * ZKR_SESSION_TIMEOUT_MAX_MS; the server may negotiate it into [2, 20] x
     * its tickTime.  Default (and 0) 15000. */
    int64_t session_timeout_ms;
    /* How long zkr_client_open waits for the first connection (and the
     * answer to the credentials).  Default 15000; < 0 returns at once and
     * connects in the background. */
    int64_t connect_timeout_ms;
    /* Optional chroot ("/app"): every path the client uses is relative to
     * it.  NULL or "" for none.  It must exist (zkr_client_open checks). */
    const char *chroot;
    /* Allow connecting to a read-only server (reports READ_ONLY). */
    int allow_read_only;
    /* Optional authentication, as zoo_add_auth (e.g. "digest", "user:pw").
     * NULL scheme for none.  Re-added, and confirmed, on every new session.
     * ZooKeeper's digest scheme accepts any password (the identity is the
     * user and a hash of the password): a wrong one is a different identity,
     * seen only as ZKR_ENOAUTH on nodes it has no rights to. */
    const char *auth_scheme;
    const char *auth_data;
    int auth_data_len;
    /* This client's threshold for the ZooKeeper C client's lines about
     * its handles: -1 (default) the same as log_level, 0 none, 1 error, 2
     * warn, 3 info, 4 debug.  Which lines the C client makes at all is
     * process-wide: zkr_set_zk_log_level (this option never changes it). */
    int zk_log_level;
    /* The ACL of every node and parent the recipes create.  Default
     * ZKR_ACL_OPEN.  acl/acl_count: the entries for ZKR_ACL_CUSTOM (copied
     * at open; at least one; perms 1..ZKR_PERM_ALL, scheme and id set). */
    zkr_acl_mode_t acl_mode;
    const zkr_acl_t *acl;
    size_t acl_count;
    /* Where this client's log lines go: log_fn(c, level, source, message,
     * log_ctx) for lines at or below log_level (default ZKR_LOG_WARN; 0
     * none).  Without log_fn the same lines go to stderr as
     * "source: level: message".  Nothing else is written to stderr. */
    zkr_log_fn log_fn;
    void *log_ctx;
    int log_level;
} zkr_client_options_t;

/* The ZooKeeper C client's own log level, which is process-wide (every
 * client of the process, and ZooKeeper handles the program makes itself):
 * 0 silences it, 1 error, 2 warn, 3 info (the C client's default), 4
 * debug.  Its lines about a client's handles then go to that client's
 * log_fn (or stderr), filtered by its zk_log_level.  Any thread, any time.
 * Returns ZKR_OK, ZKR_EINVAL (level outside 0..4: nothing changes). */
ZKR_EXTERN int zkr_set_zk_log_level(int level);

/* Fill `opt` with the defaults above and its size.  NULL, or a size too
 * small to hold the size field itself, is ignored (nothing written).
 * zkr_client_options_init(opt) is a macro for
 * zkr_client_options_init_size(opt, sizeof(zkr_client_options_t)): the size of the struct
 * the program was built with, of which no more bytes are written.  (The
 * function zkr_client_options_init, for programs built before the macro,
 * fills the struct of this version.) */
ZKR_EXTERN void zkr_client_options_init_size(zkr_client_options_t *opt, size_t size);
ZKR_EXTERN void zkr_client_options_init(zkr_client_options_t *opt);
#define zkr_client_options_init(opt) zkr_client_options_init_size((opt), sizeof(zkr_client_options_t))

/* Open a client.  `hosts` is a ZooKeeper connection string
 * "host:port[,host:port...]" (IPv6 as "[addr]:port"); `opt` may be NULL for
 * the defaults.
 * Returns:
 *   ZKR_OK          *out is the client (connected, credentials accepted,
 *                   chroot present; unless connect_timeout_ms < 0)
 *   ZKR_EINVAL      out or hosts NULL; hosts empty, too long, with an empty
 *                   entry, no port or a port outside 1..65535; opt->size
 *                   not one this library reads (larger: a newer header's
 *                   struct; smaller than 1.0's; not made by
 *                   zkr_client_options_init); bad chroot;
 *                   session_timeout_ms outside 0 or
 *                   ZKR_SESSION_TIMEOUT_MIN_MS..MAX; zk_log_level outside
 *                   -1..4; auth_data NULL or auth_data_len < 0 with a
 *                   scheme; ZKR_ACL_CREATOR_ALL without auth_scheme; a bad
 *                   ZKR_ACL_CUSTOM list; an unknown acl_mode; log_level
 *                   outside 0..4
 *   ZKR_ETIMEDOUT   no connection (or no answer to the credentials) within
 *                   connect_timeout_ms (nothing leaks; *out is NULL)
 *   ZKR_ENOAUTH     the server refused the credentials (unknown scheme, ...)
 *   ZKR_ENONODE     the chroot does not exist
 *   ZKR_ENOMEM, ZKR_ESYSTEM, ZKR_EZOOKEEPER  resources / handle creation */
ZKR_EXTERN int zkr_client_open(zkr_client_t **out, const char *hosts,
                               const zkr_client_options_t *opt);

/* Wait until the client is connected (CONNECTED, RECONNECTED or READ_ONLY).
 * Returns ZKR_OK, ZKR_EINVAL (c NULL), ZKR_ETIMEDOUT, ZKR_ECLOSED (the client
 * was closed while waiting), ZKR_ENOAUTH. */
ZKR_EXTERN int zkr_client_wait_connected(zkr_client_t *c, int64_t timeout_ms);

/* The last state the client reached (the one listeners were or are about
 * to be told).  ZKR_STATE_LATENT for NULL. */
ZKR_EXTERN zkr_state_t zkr_client_state(zkr_client_t *c);

/* 1 if the client is connected and its session usable, 0 otherwise. */
ZKR_EXTERN int zkr_client_is_connected(zkr_client_t *c);

/* The current session: id and, if passwd is not NULL, its 16-byte password.
 * Returns ZKR_OK, ZKR_EINVAL (c or session_id NULL), ZKR_ECONNLOSS (no session has
 * been established yet). */
ZKR_EXTERN int zkr_client_session(zkr_client_t *c, int64_t *session_id, char passwd[16]);

/* The session timeout the server negotiated (ms) for the current session.
 * Returns ZKR_OK, ZKR_EINVAL, ZKR_ECONNLOSS (never connected). */
ZKR_EXTERN int zkr_client_session_timeout(zkr_client_t *c, int64_t *timeout_ms);

/* One session for locks and data.  The ZooKeeper C client's handle type
 * (<zookeeper/zookeeper.h>: zhandle_t). */
struct _zhandle;
typedef int (*zkr_handle_fn)(struct _zhandle *zh, int64_t session_id, void *ctx);

/* Run fn(zh, session_id, ctx) on the calling thread with the client's
 * current ZooKeeper handle, for the program's own data calls on the same
 * session as its locks (as Curator users share one CuratorFramework).
 * While fn runs the handle cannot be closed or freed: a session rebuild
 * retires it, and zkr_client_close waits for fn to return.  session_id is
 * the session the handle last connected with (0 before the first).
 * Rules for fn:
 *   - use zh only inside fn; never close it, never keep it;
 *   - it may call the library (not zkr_client_close: ZKR_EDEADLK);
 *   - after LOST the handle is the dead session's until the client has a
 *     new one: calls on it fail cleanly (ZSESSIONEXPIRED, ZINVALIDSTATE,
 *     ZCONNECTIONLOSS), and the next zkr_client_with_handle gets the new
 *     handle; ephemeral nodes and watches made through it go with its
 *     session, exactly as the locks' nodes do.
 * Returns what fn returned, or ZKR_EINVAL (c or fn NULL), ZKR_ECLOSED (the
 * client is closing). */
ZKR_EXTERN int zkr_client_with_handle(zkr_client_t *c, zkr_handle_fn fn, void *ctx);

/* State listener.  Called with each state change, in order, exactly once per
 * change (duplicates are not reported). */
typedef void (*zkr_state_fn)(zkr_client_t *c, zkr_state_t state, void *ctx);

/* Register a listener.  The same (fn, ctx) pair may be added only once.
 * Returns ZKR_OK, ZKR_EINVAL (NULL c or fn), ZKR_EALREADY (already
 * registered), ZKR_ENOMEM, ZKR_ECLOSED. */
ZKR_EXTERN int zkr_client_add_listener(zkr_client_t *c, zkr_state_fn fn, void *ctx);

/* Remove a listener.  When it returns, the listener is not running (unless
 * this is called from inside that listener) and will not be called again.
 * Returns ZKR_OK, ZKR_EINVAL (NULL c or fn), ZKR_ENOTFOUND (not registered). */
ZKR_EXTERN int zkr_client_remove_listener(zkr_client_t *c, zkr_state_fn fn, void *ctx);

/* Close the session (ephemeral lock nodes vanish at once on the server).
 * Threads blocked in the library on this client return ZKR_ECLOSED; when
 * zkr_client_close returns, no callback of this client runs any more.
 * Safe while disconnected.  Lock objects and leases made on the client may
 * be freed before or after it, even while it closes: after close their
 * calls that need the server return ZKR_ECLOSED (releases: ZKR_OK, their
 * nodes went with the session; a hold's state is LOST and *_is_held 0
 * from the moment close begins, and a reentrant acquire returns
 * ZKR_ECLOSED), and *_free only frees memory; the client's own memory is freed
 * when it and every object made on it are.  Call it once per client.
 * On a connected link it first lets the answers to requests still in
 * flight arrive (a delete sent without waiting, say): at most 1 s if the
 * link has stalled.  Then the C client waits (up to 1.5 s) for the server
 * to confirm the close.
 * Returns:
 *   ZKR_OK       closed (also for NULL, a no-op)
 *   ZKR_EDEADLK  called from a callback of this same client (they run
 *                on its callback thread, which close must join), or from
 *                the function zkr_client_with_handle runs, or from a
 *                completion being dispatched: nothing was done
 *   ZKR_ECLOSED  another thread is closing it already */
ZKR_EXTERN int zkr_client_close(zkr_client_t *c);

/* ---- asynchronous calls: where their completions run, cancel (zkr/async.h) ---- */

/* Where the completions of asynchronous calls run (see zkr/async.h). */
typedef enum zkr_dispatch_mode {
    ZKR_DISPATCH_LOOP = 0,  /* zkr_client_dispatch, on the caller's thread */
    ZKR_DISPATCH_THREAD = 1 /* the client's callback thread */
} zkr_dispatch_mode_t;

/* Choose where completions run; may be changed at any time (completions
 * already waiting then follow the new mode).  Returns ZKR_OK, ZKR_EINVAL
 * (c NULL or unknown mode), ZKR_ECLOSED. */
ZKR_EXTERN int zkr_client_set_dispatch(zkr_client_t *c, zkr_dispatch_mode_t mode);

/* A file descriptor that is readable while completions wait to be
 * dispatched (an eventfd, non-blocking, close-on-exec, owned by the client:
 * never read, write or close it; poll it for reading).  The same fd for the
 * client's whole life.  Returns the fd (>= 0), or ZKR_EINVAL (c NULL),
 * ZKR_ECLOSED, ZKR_ESYSTEM (no eventfd). */
ZKR_EXTERN int zkr_client_fd(zkr_client_t *c);

/* Run, on the calling thread, the completions waiting now (not those that
 * become ready meanwhile: call it again when the fd is readable).  Safe
 * with nothing pending, and from several threads (each completion runs
 * once).  A completion may call the library (acquire, cancel, release,
 * dispatch), but not zkr_client_close on this client (ZKR_EDEADLK).
 * Returns how many completions ran (>= 0), or ZKR_EINVAL (c NULL). */
ZKR_EXTERN int zkr_client_dispatch(zkr_client_t *c);

/* Cancel a pending acquire by its acquire id (never a pointer, so a cancel racing
 * the completion touches no freed memory).
 *   ZKR_OK      cancelled: its completion will run once with ZKR_ECANCELED
 *               (on the dispatching thread, not inside this call), and its
 *               node is deleted (or its deletion scheduled).  This holds
 *               also when the grant raced ahead of the cancel but its
 *               completion had not started yet: the hold is released and
 *               ZKR_ECANCELED reported instead.
 *   ZKR_ENOTFOUND no such pending acquire: the id is unknown, or its
 *               completion has started or run (then the completion
 *               reported the outcome, a hold to release if ZKR_OK)
 *   ZKR_EINVAL  c NULL or acquire_id 0 */
ZKR_EXTERN int zkr_async_cancel(zkr_client_t *c, uint64_t acquire_id);

#ifdef __cplusplus
}
#endif
#endif

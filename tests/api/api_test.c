/* The API test: the conventions of the whole API (<zkr/common.h>,
 * zkrecipes(7) CONVENTIONS) checked from the outside, as a program built
 * against the installed library sees them: only <zkr/zkr.h>, no internal
 * header, no <zookeeper/zookeeper.h>.  Run by tests/api/run.sh against an
 * installed root (under valgrind, then built with ASan/UBSan).
 *
 *   api_test HOSTS          (a running ZooKeeper, "127.0.0.1:2181")
 *
 * One line per check, TAP-like ("ok N - ...", "not ok N - ..."), the plan
 * at the end; exits 1 if any check failed, 2 if it could not start.  Every
 * wait is bounded (WAIT_MS).  What another session does to a hold (delete
 * its node) is done through the public API too: a guarded write of a
 * second client, whose one operation deletes the holder's node.  Connection
 * states are made by a small TCP relay of this program between a client
 * and the server (gate: accept or not; drop: cut every connection). */
#define _POSIX_C_SOURCE 200809L

#include <zkr/zkr.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* The longest any one event is waited for (the program may run under
 * valgrind on a busy machine; events normally come within milliseconds). */
#define WAIT_MS 15000

/* ---- bookkeeping ------------------------------------------------------------ */

static int g_run, g_failed;
static int g_verbose;
static char g_base[128];       /* every path of this run is under it */
static char g_garbage[8];      /* a pointer no getter may keep or free */

static void check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(int ok, const char *fmt, ...)
{
    va_list ap;
    g_run++;
    if (!ok)
        g_failed++;
    printf("%s %d - ", ok ? "ok" : "not ok", g_run);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
}
#define CHECK(cond, ...) check(!!(cond), __VA_ARGS__)

/* got == want, the message followed by the expected code (and what came). */
static void check_rc(int got, int want, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void check_rc(int got, int want, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (got == want)
        check(1, "%s: %s", msg, zkr_err_name(want));
    else
        check(0, "%s: %s (got %s)", msg, zkr_err_name(want), zkr_err_name(got));
}

/* A call that must refuse its NULL object with ZKR_EINVAL. */
#define NULL_REFUSED(expr) check_rc((expr), ZKR_EINVAL, "NULL object: %s", #expr)

/* A node-path getter that must fail with `want` and set *path to NULL
 * first (p_ is pre-set to a pointer it must not keep or free). */
#define PATH_REFUSED(want, call)                                                                               \
    do {                                                                                                       \
        char *p_ = g_garbage;                                                                                  \
        int rc_ = (call);                                                                                      \
        check(rc_ == (want) && p_ == NULL, "%s: %s and *path set to NULL (got %s, *path %s)", #call,          \
              zkr_err_name(want), zkr_err_name(rc_),                                                           \
              p_ == NULL ? "NULL" : p_ == g_garbage ? "left as it was" : "a new string");                      \
        if (p_ && p_ != g_garbage)                                                                             \
            zkr_free(p_);                                                                                      \
    } while (0)

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Wait until *v >= want, at most timeout_ms.  Returns whether it is. */
static int wait_int(atomic_int *v, int want, int64_t timeout_ms)
{
    int64_t end = now_ms() + timeout_ms;
    while (atomic_load(v) < want && now_ms() < end)
        sleep_ms(5);
    return atomic_load(v) >= want;
}

static const char *path_of(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "%s/%s", g_base, name);
    return buf;
}

/* p is a node directly or indirectly under dir */
static int under(const char *p, const char *dir)
{
    size_t n = strlen(dir);
    return p && strncmp(p, dir, n) == 0 && p[n] == '/' && p[n + 1] != '\0';
}

/* Two results of one node-path getter on a real hold: both ZKR_OK, the
 * node under dir, two copies (the caller's: freed here with zkr_free). */
static void owned_paths(const char *what, const char *dir, int rc1, char *p1, int rc2, char *p2)
{
    check(rc1 == ZKR_OK && under(p1, dir), "%s on a hold: ZKR_OK and its node under %s (got %s, %s)", what, dir,
          zkr_err_name(rc1), p1 ? p1 : "NULL");
    check(rc2 == ZKR_OK && p1 && p2 && p1 != p2 && strcmp(p1, p2) == 0,
          "%s: each call hands out a copy of its own, freed with zkr_free", what);
    zkr_free(p1);
    zkr_free(p2);
}

static void in_thread_run(void (*fn)(void *), void *arg);

/* ---- clients ------------------------------------------------------------------ */

typedef struct log_told {
    atomic_int zk_lines;  /* lines of the ZooKeeper C client */
    atomic_int own_lines; /* the library's own */
    atomic_int no_client; /* lines told without their client */
} log_told_t;

static void on_log(zkr_client_t *c, int level, const char *source, const char *message, void *ctx)
{
    log_told_t *t = ctx;
    if (!c)
        atomic_fetch_add(&t->no_client, 1);
    if (source && strcmp(source, "zookeeper") == 0)
        atomic_fetch_add(&t->zk_lines, 1);
    else
        atomic_fetch_add(&t->own_lines, 1);
    if (g_verbose || (level <= ZKR_LOG_WARN && source && strcmp(source, "zookeeper") != 0))
        fprintf(stderr, "# log %s %d: %s\n", source ? source : "?", level, message ? message : "?");
}

static log_told_t g_log;

static int open_client(zkr_client_t **c, const char *hosts, int64_t connect_ms)
{
    zkr_client_options_t opt;
    zkr_client_options_init(&opt);
    opt.session_timeout_ms = 10000;
    opt.connect_timeout_ms = connect_ms;
    opt.log_fn = on_log;
    opt.log_ctx = &g_log;
    *c = NULL;
    return zkr_client_open(c, hosts, &opt);
}

/* Delete `node` from the session of `other`: a guarded write (guard: the
 * node itself, any session) whose one operation deletes it. */
static int delete_from(zkr_client_t *other, const char *node)
{
    zkr_op_t op = ZKR_OP_DELETE_INIT(node, -1);
    int rc = zkr_guarded_write(other, node, 0, &op, 1);
    zkr_ops_clear(&op, 1);
    return rc;
}

/* ---- callbacks: each records what it was told -------------------------------- */

/* a lock's hold listener (zkr_hold_fn) */
typedef struct hold_told {
    zkr_lock_ref_t expect; /* the lock it must be told */
    zkr_lock_ref_t other;  /* one it must not be told (obj NULL: none) */
    atomic_int calls, safe, in_doubt, lost, wrong, other_match;
    char node[512]; /* node_path of the first call */
} hold_told_t;

static void on_hold(zkr_lock_ref_t lock, zkr_hold_state_t state, const char *node_path, void *ctx)
{
    hold_told_t *t = ctx;
    if (!zkr_lock_ref_equal(lock, t->expect))
        atomic_fetch_add(&t->wrong, 1);
    if (t->other.obj && zkr_lock_ref_equal(lock, t->other))
        atomic_fetch_add(&t->other_match, 1);
    if (atomic_load(&t->calls) == 0)
        snprintf(t->node, sizeof t->node, "%s", node_path ? node_path : "(NULL)");
    if (state == ZKR_HOLD_SAFE)
        atomic_fetch_add(&t->safe, 1);
    else if (state == ZKR_HOLD_IN_DOUBT)
        atomic_fetch_add(&t->in_doubt, 1);
    else if (state == ZKR_HOLD_LOST)
        atomic_fetch_add(&t->lost, 1);
    atomic_fetch_add(&t->calls, 1);
}

/* a semaphore's hold listener (zkr_lease_fn) */
typedef struct lease_told {
    zkr_semaphore_t *expect;
    atomic_int calls, lost, wrong;
    char node[512];
} lease_told_t;

static void on_lease_state(zkr_semaphore_t *s, zkr_hold_state_t state, const char *node_path, void *ctx)
{
    lease_told_t *t = ctx;
    if (s != t->expect)
        atomic_fetch_add(&t->wrong, 1);
    if (atomic_load(&t->calls) == 0)
        snprintf(t->node, sizeof t->node, "%s", node_path ? node_path : "(NULL)");
    if (state == ZKR_HOLD_LOST)
        atomic_fetch_add(&t->lost, 1);
    atomic_fetch_add(&t->calls, 1);
}

/* an asynchronous acquire's completion (zkr_acquire_fn, zkr_lease_acquire_fn) */
typedef struct acq_told {
    atomic_int done, calls;
    uint64_t id;
    int rc;
    zkr_hold_t *hold;
    zkr_lease_t *lease;
} acq_told_t;

static void on_acquired(uint64_t acquire_id, int rc, zkr_hold_t *hold, void *ctx)
{
    acq_told_t *t = ctx;
    t->id = acquire_id;
    t->rc = rc;
    t->hold = hold;
    atomic_fetch_add(&t->calls, 1);
    atomic_store(&t->done, 1);
}

static void on_lease_acquired(uint64_t acquire_id, int rc, zkr_lease_t *lease, void *ctx)
{
    acq_told_t *t = ctx;
    t->id = acquire_id;
    t->rc = rc;
    t->lease = lease;
    atomic_fetch_add(&t->calls, 1);
    atomic_store(&t->done, 1);
}

/* an asynchronous release's completion (zkr_release_fn) */
typedef struct rel_told {
    atomic_int done, calls;
    int rc;
} rel_told_t;

static void on_released(int rc, void *ctx)
{
    rel_told_t *t = ctx;
    t->rc = rc;
    atomic_fetch_add(&t->calls, 1);
    atomic_store(&t->done, 1);
}

/* a latch's listener (zkr_latch_fn) */
typedef struct latch_told {
    zkr_latch_t *expect;
    atomic_int leader, not_leader, wrong;
    int64_t token;
} latch_told_t;

static void on_latch(zkr_latch_t *l, int is_leader, int64_t token, void *ctx)
{
    latch_told_t *t = ctx;
    if (l != t->expect)
        atomic_fetch_add(&t->wrong, 1);
    if (is_leader) {
        t->token = token;
        atomic_fetch_add(&t->leader, 1);
    } else {
        atomic_fetch_add(&t->not_leader, 1);
    }
}

/* a selector's listener (zkr_selector_fn) */
typedef struct selector_told {
    zkr_selector_t *expect;
    atomic_int leader, not_leader, wrong;
} selector_told_t;

static void on_selector(zkr_selector_t *s, int is_leader, int64_t token, void *ctx)
{
    selector_told_t *t = ctx;
    (void)token;
    if (s != t->expect)
        atomic_fetch_add(&t->wrong, 1);
    atomic_fetch_add(is_leader ? &t->leader : &t->not_leader, 1);
}

/* a selector's take-leadership function (zkr_take_leadership_fn): it is
 * made before the selector exists, so it records what it was told */
typedef struct take_told {
    _Atomic(zkr_selector_t *) got;
    atomic_int calls, running, returned;
    int64_t token;
    int stop_rc, close_rc;
} take_told_t;

static void on_take_leadership(zkr_selector_t *s, int64_t token, void *ctx)
{
    take_told_t *t = ctx;
    atomic_store(&t->got, s);
    t->token = token;
    atomic_fetch_add(&t->calls, 1);
    atomic_store(&t->running, 1);
    t->stop_rc = zkr_selector_wait_stop(s, WAIT_MS); /* until interrupted */
    t->close_rc = zkr_selector_close(s);             /* from its own callback: ZKR_EDEADLK */
    atomic_store(&t->running, 0);
    atomic_store(&t->returned, 1);
}

/* an observer's function (zkr_observe_fn): the first call may come before
 * zkr_observer_new returns, so it records the observer it was told */
typedef struct obs_told {
    _Atomic(zkr_observer_t *) first;
    atomic_int calls, with_leader, without_leader, changed_object;
    char leader_node[512];
    char leader_id[64];
} obs_told_t;

static void on_observe(zkr_observer_t *o, const zkr_participant_t *leader, void *ctx)
{
    obs_told_t *t = ctx;
    zkr_observer_t *none = NULL;
    if (!atomic_compare_exchange_strong(&t->first, &none, o) && none != o)
        atomic_fetch_add(&t->changed_object, 1); /* told another observer later */
    if (leader) {
        if (atomic_load(&t->with_leader) == 0) {
            snprintf(t->leader_node, sizeof t->leader_node, "%s", leader->node_path ? leader->node_path : "(NULL)");
            snprintf(t->leader_id, sizeof t->leader_id, "%s", leader->id ? leader->id : "(NULL)");
        }
        atomic_fetch_add(&t->with_leader, 1);
    } else {
        atomic_fetch_add(&t->without_leader, 1);
    }
    atomic_fetch_add(&t->calls, 1);
}

/* a client's state listener (zkr_state_fn) */
typedef struct state_told {
    zkr_client_t *expect;
    atomic_int calls, connected, suspended, reconnected, lost, wrong;
    atomic_int close_tried;
    int close_rc;
} state_told_t;

static void on_state(zkr_client_t *c, zkr_state_t state, void *ctx)
{
    state_told_t *t = ctx;
    if (c != t->expect)
        atomic_fetch_add(&t->wrong, 1);
    if (state == ZKR_STATE_CONNECTED && !atomic_load(&t->close_tried)) {
        t->close_rc = zkr_client_close(c); /* its own client, from its callback: ZKR_EDEADLK */
        atomic_store(&t->close_tried, 1);
    }
    if (state == ZKR_STATE_CONNECTED)
        atomic_fetch_add(&t->connected, 1);
    else if (state == ZKR_STATE_SUSPENDED)
        atomic_fetch_add(&t->suspended, 1);
    else if (state == ZKR_STATE_RECONNECTED)
        atomic_fetch_add(&t->reconnected, 1);
    else if (state == ZKR_STATE_LOST)
        atomic_fetch_add(&t->lost, 1);
    atomic_fetch_add(&t->calls, 1);
}

/* a revocation request's function (zkr_revoke_fn) */
typedef struct revoke_told {
    zkr_mutex_t *expect;
    atomic_int calls, wrong;
} revoke_told_t;

static void on_revoke(zkr_mutex_t *m, void *ctx)
{
    revoke_told_t *t = ctx;
    if (m != t->expect)
        atomic_fetch_add(&t->wrong, 1);
    atomic_fetch_add(&t->calls, 1);
}

/* zkr_client_close of its own client from the function zkr_client_with_handle runs */
static int close_in_handle_fn(struct _zhandle *zh, int64_t session_id, void *ctx)
{
    (void)zh;
    (void)session_id;
    return zkr_client_close(ctx);
}

static int with_handle_fn(struct _zhandle *zh, int64_t session_id, void *ctx)
{
    (void)zh;
    (void)session_id;
    (void)ctx;
    return ZKR_OK;
}

/* Run the completions of a client in ZKR_DISPATCH_LOOP mode until *flag is
 * set, polling its fd; at most timeout_ms. */
static int dispatch_until(zkr_client_t *c, atomic_int *flag, int64_t timeout_ms)
{
    int fd = zkr_client_fd(c);
    int64_t end = now_ms() + timeout_ms;
    while (!atomic_load(flag) && now_ms() < end) {
        struct pollfd p = {fd, POLLIN, 0};
        if (fd >= 0)
            poll(&p, 1, 50);
        else
            sleep_ms(50);
        zkr_client_dispatch(c);
    }
    return atomic_load(flag);
}

/* ---- error codes ------------------------------------------------------------------ */

typedef struct err_row {
    int code;
    const char *name;
} err_row_t;
#define ERR_ROW_(name, value, msg) {ZKR_##name, "ZKR_" #name},
static const err_row_t g_errs[] = {ZKR_ERRNO_MAP(ERR_ROW_)};
#undef ERR_ROW_

static void section_errors(void)
{
    size_t n = sizeof g_errs / sizeof g_errs[0];
    printf("# error codes: one name and one message each\n");
    for (size_t i = 0; i < n; i++) {
        const char *name = zkr_err_name(g_errs[i].code), *msg = zkr_strerror(g_errs[i].code);
        int distinct = name && strcmp(name, "ZKR_E?") != 0 && strcmp(name, "ZKR_OK") != 0;
        for (size_t j = 0; distinct && j < n; j++)
            if (j != i && strcmp(name, zkr_err_name(g_errs[j].code)) == 0)
                distinct = 0;
        check(g_errs[i].code < 0 && name && strcmp(name, g_errs[i].name) == 0 && distinct && msg && msg[0] &&
                  strcmp(msg, "unknown error") != 0,
              "%s (%d): zkr_err_name is its own name, distinct; zkr_strerror \"%s\"", g_errs[i].name,
              g_errs[i].code, msg ? msg : "(NULL)");
    }
    CHECK(strcmp(zkr_err_name(-999), "ZKR_E?") == 0 && strcmp(zkr_err_name(1), "ZKR_E?") == 0,
          "zkr_err_name of an unknown code: \"ZKR_E?\"");
    CHECK(strcmp(zkr_strerror(-999), "unknown error") == 0, "zkr_strerror of an unknown code: \"unknown error\"");
    CHECK(strcmp(zkr_state_name((zkr_state_t)99), "UNKNOWN") == 0 &&
              strcmp(zkr_state_name(ZKR_STATE_SUSPENDED), "SUSPENDED") == 0,
          "zkr_state_name: names, \"UNKNOWN\" out of range");
    CHECK(strcmp(zkr_hold_state_name((zkr_hold_state_t)99), "UNKNOWN") == 0 &&
              strcmp(zkr_hold_state_name(ZKR_HOLD_IN_DOUBT), "IN_DOUBT") == 0,
          "zkr_hold_state_name: names, \"UNKNOWN\" out of range");
    CHECK(strcmp(zkr_version(), ZKR_VERSION) == 0 && ZKR_VERSION_MAJOR >= 1,
          "zkr_version() \"%s\" is the headers' ZKR_VERSION \"%s\" (1.x)", zkr_version(), ZKR_VERSION);
    {
        const char *msg = g_garbage;
        int zrc = zkr_last_zk_error(&msg);
        CHECK(zrc <= 0 && msg && msg != g_garbage, "zkr_last_zk_error: a code <= 0 and a lent message (\"%s\")",
              msg && msg != g_garbage ? msg : "?");
    }
}

/* ---- NULL ------------------------------------------------------------------------------ */

static void section_null(void)
{
    zkr_op_t op = ZKR_OP_SET_INIT("/x", "v", 1, -1);
    zkr_lease_t *leases[2] = {NULL, NULL};
    int64_t i64 = 0;
    int32_t i32 = 0;
    uint64_t id = 0;
    size_t count = 0;
    char **paths = NULL;
    zkr_participant_t *parts = NULL;
    acq_told_t at;
    rel_told_t rt;
    memset(&at, 0, sizeof at);
    memset(&rt, 0, sizeof rt);

    printf("# NULL: every *_free and zkr_client_close accept it\n");
    zkr_mutex_free(NULL);
    CHECK(1, "zkr_mutex_free(NULL)");
    zkr_rwlock_free(NULL);
    CHECK(1, "zkr_rwlock_free(NULL)");
    zkr_semaphore_free(NULL);
    CHECK(1, "zkr_semaphore_free(NULL)");
    zkr_semaphore_mutex_free(NULL);
    CHECK(1, "zkr_semaphore_mutex_free(NULL)");
    zkr_multilock_free(NULL);
    CHECK(1, "zkr_multilock_free(NULL)");
    zkr_latch_free(NULL);
    CHECK(1, "zkr_latch_free(NULL)");
    zkr_selector_free(NULL);
    CHECK(1, "zkr_selector_free(NULL)");
    zkr_observer_free(NULL);
    CHECK(1, "zkr_observer_free(NULL)");
    zkr_free(NULL);
    CHECK(1, "zkr_free(NULL)");
    zkr_strings_free(NULL, 0);
    zkr_strings_free(NULL, 3);
    CHECK(1, "zkr_strings_free(NULL, 0) and (NULL, 3)");
    zkr_participants_free(NULL, 0);
    zkr_participants_free(NULL, 3);
    CHECK(1, "zkr_participants_free(NULL, 0) and (NULL, 3)");
    zkr_ops_clear(NULL, 3);
    CHECK(1, "zkr_ops_clear(NULL, 3)");
    check_rc(zkr_client_close(NULL), ZKR_OK, "zkr_client_close(NULL) does nothing");

    printf("# NULL: every release refuses it\n");
    NULL_REFUSED(zkr_mutex_release(NULL));
    NULL_REFUSED(zkr_rwlock_read_release(NULL));
    NULL_REFUSED(zkr_rwlock_write_release(NULL));
    NULL_REFUSED(zkr_semaphore_mutex_release(NULL));
    NULL_REFUSED(zkr_lease_release(NULL));
    NULL_REFUSED(zkr_lease_release_all(NULL, 1));
    NULL_REFUSED(zkr_lease_release_async(NULL, on_released, &rt));
    NULL_REFUSED(zkr_hold_release(NULL));
    NULL_REFUSED(zkr_hold_release_async(NULL, on_released, &rt));
    NULL_REFUSED(zkr_multilock_release(NULL));
    NULL_REFUSED(zkr_lock_release(zkr_mutex_ref(NULL)));
    NULL_REFUSED(zkr_lock_release(zkr_rwlock_read_ref(NULL)));
    NULL_REFUSED(zkr_lock_release(zkr_rwlock_write_ref(NULL)));
    NULL_REFUSED(zkr_lock_release(zkr_semaphore_mutex_ref(NULL)));
    check_rc(zkr_lease_release_all(leases, 2), ZKR_OK, "zkr_lease_release_all of NULL entries skips them");

    printf("# NULL: getters give their neutral value\n");
    CHECK(zkr_client_state(NULL) == ZKR_STATE_LATENT, "zkr_client_state(NULL) == ZKR_STATE_LATENT");
    CHECK(zkr_client_is_connected(NULL) == 0, "zkr_client_is_connected(NULL) == 0");
    CHECK(zkr_mutex_is_held(NULL) == 0, "zkr_mutex_is_held(NULL) == 0");
    CHECK(zkr_mutex_is_held_by_process(NULL) == 0, "zkr_mutex_is_held_by_process(NULL) == 0");
    CHECK(zkr_mutex_hold_state(NULL) == ZKR_HOLD_NONE, "zkr_mutex_hold_state(NULL) == ZKR_HOLD_NONE");
    CHECK(zkr_rwlock_read_is_held(NULL) == 0, "zkr_rwlock_read_is_held(NULL) == 0");
    CHECK(zkr_rwlock_write_is_held(NULL) == 0, "zkr_rwlock_write_is_held(NULL) == 0");
    CHECK(zkr_rwlock_read_hold_state(NULL) == ZKR_HOLD_NONE, "zkr_rwlock_read_hold_state(NULL) == ZKR_HOLD_NONE");
    CHECK(zkr_rwlock_write_hold_state(NULL) == ZKR_HOLD_NONE, "zkr_rwlock_write_hold_state(NULL) == ZKR_HOLD_NONE");
    CHECK(zkr_semaphore_mutex_is_held(NULL) == 0, "zkr_semaphore_mutex_is_held(NULL) == 0");
    CHECK(zkr_semaphore_mutex_hold_state(NULL) == ZKR_HOLD_NONE,
          "zkr_semaphore_mutex_hold_state(NULL) == ZKR_HOLD_NONE");
    CHECK(zkr_lease_hold_state(NULL) == ZKR_HOLD_NONE, "zkr_lease_hold_state(NULL) == ZKR_HOLD_NONE");
    CHECK(zkr_hold_state(NULL) == ZKR_HOLD_NONE, "zkr_hold_state(NULL) == ZKR_HOLD_NONE");
    CHECK(strcmp(zkr_hold_kind(NULL), "invalid") == 0, "zkr_hold_kind(NULL) == \"invalid\"");
    CHECK(zkr_lock_is_held(zkr_mutex_ref(NULL)) == 0, "zkr_lock_is_held(zkr_mutex_ref(NULL)) == 0");
    CHECK(zkr_lock_hold_state(zkr_rwlock_read_ref(NULL)) == ZKR_HOLD_NONE,
          "zkr_lock_hold_state(zkr_rwlock_read_ref(NULL)) == ZKR_HOLD_NONE");
    CHECK(strcmp(zkr_lock_kind(zkr_semaphore_mutex_ref(NULL)), "invalid") == 0,
          "zkr_lock_kind(zkr_semaphore_mutex_ref(NULL)) == \"invalid\"");
    CHECK(zkr_multilock_is_held(NULL) == 0, "zkr_multilock_is_held(NULL) == 0");
    CHECK(zkr_latch_has_leadership(NULL) == 0, "zkr_latch_has_leadership(NULL) == 0");
    CHECK(zkr_latch_id(NULL) && strcmp(zkr_latch_id(NULL), "") == 0, "zkr_latch_id(NULL) == \"\" (its header)");
    CHECK(zkr_selector_has_leadership(NULL) == 0, "zkr_selector_has_leadership(NULL) == 0");
    CHECK(zkr_selector_should_stop(NULL) == 1, "zkr_selector_should_stop(NULL) == 1 (its header)");

    printf("# NULL: every node-path getter refuses it and sets *path to NULL first\n");
    PATH_REFUSED(ZKR_EINVAL, zkr_mutex_node_path(NULL, &p_));
    PATH_REFUSED(ZKR_EINVAL, zkr_rwlock_read_node_path(NULL, &p_));
    PATH_REFUSED(ZKR_EINVAL, zkr_rwlock_write_node_path(NULL, &p_));
    PATH_REFUSED(ZKR_EINVAL, zkr_semaphore_mutex_node_path(NULL, &p_));
    PATH_REFUSED(ZKR_EINVAL, zkr_lock_node_path(zkr_mutex_ref(NULL), &p_));
    PATH_REFUSED(ZKR_EINVAL, zkr_lock_node_path(zkr_rwlock_write_ref(NULL), &p_));
    PATH_REFUSED(ZKR_EINVAL, zkr_lease_node_path(NULL, &p_));
    PATH_REFUSED(ZKR_EINVAL, zkr_hold_node_path(NULL, &p_));
    PATH_REFUSED(ZKR_EINVAL, zkr_latch_node_path(NULL, &p_));
    PATH_REFUSED(ZKR_EINVAL, zkr_selector_node_path(NULL, &p_));
    NULL_REFUSED(zkr_mutex_node_path(NULL, NULL));

    printf("# NULL: every other call refuses it with ZKR_EINVAL\n");
    {
        zkr_mutex_t *m = NULL;
        zkr_rwlock_t *l = NULL;
        zkr_semaphore_t *s = NULL;
        zkr_semaphore_mutex_t *sm = NULL;
        zkr_multilock_t *ml = NULL;
        zkr_latch_t *la = NULL;
        zkr_selector_t *se = NULL;
        zkr_observer_t *ob = NULL;
        zkr_lease_t *lease = NULL;
        NULL_REFUSED(zkr_client_open(NULL, "127.0.0.1:2181", NULL));
        NULL_REFUSED(zkr_client_wait_connected(NULL, 0));
        NULL_REFUSED(zkr_client_session(NULL, &i64, NULL));
        NULL_REFUSED(zkr_client_session_timeout(NULL, &i64));
        NULL_REFUSED(zkr_client_with_handle(NULL, with_handle_fn, NULL));
        NULL_REFUSED(zkr_client_add_listener(NULL, on_state, NULL));
        NULL_REFUSED(zkr_client_remove_listener(NULL, on_state, NULL));
        NULL_REFUSED(zkr_client_set_dispatch(NULL, ZKR_DISPATCH_THREAD));
        NULL_REFUSED(zkr_client_fd(NULL));
        NULL_REFUSED(zkr_client_dispatch(NULL));
        NULL_REFUSED(zkr_async_cancel(NULL, 1));
        NULL_REFUSED(zkr_mutex_new(&m, NULL, "/x"));
        NULL_REFUSED(zkr_mutex_acquire(NULL, 0));
        NULL_REFUSED(zkr_mutex_fencing_token(NULL, &i64));
        NULL_REFUSED(zkr_mutex_participants(NULL, &paths, &count));
        NULL_REFUSED(zkr_mutex_set_hold_listener(NULL, on_hold, NULL));
        NULL_REFUSED(zkr_mutex_make_revocable(NULL, NULL, NULL));
        NULL_REFUSED(zkr_mutex_guarded_write(NULL, &op, 1));
        NULL_REFUSED(zkr_revoke_request(NULL, "/x"));
        NULL_REFUSED(zkr_rwlock_new(&l, NULL, "/x"));
        NULL_REFUSED(zkr_rwlock_read_acquire(NULL, 0));
        NULL_REFUSED(zkr_rwlock_write_acquire(NULL, 0));
        NULL_REFUSED(zkr_rwlock_set_hold_listener(NULL, on_hold, NULL));
        NULL_REFUSED(zkr_rwlock_read_fencing_token(NULL, &i64));
        NULL_REFUSED(zkr_rwlock_write_fencing_token(NULL, &i64));
        NULL_REFUSED(zkr_rwlock_participants(NULL, &paths, &count));
        NULL_REFUSED(zkr_semaphore_new(&s, NULL, "/x", 1));
        NULL_REFUSED(zkr_semaphore_new_shared(&s, NULL, "/x", "/x-count"));
        NULL_REFUSED(zkr_semaphore_acquire(NULL, 0, &lease));
        NULL_REFUSED(zkr_semaphore_acquire_n(NULL, 1, 0, leases));
        NULL_REFUSED(zkr_semaphore_acquire_async(NULL, 0, on_lease_acquired, &at, &id));
        NULL_REFUSED(zkr_semaphore_set_hold_listener(NULL, on_lease_state, NULL));
        NULL_REFUSED(zkr_semaphore_participants(NULL, &paths, &count));
        NULL_REFUSED(zkr_shared_count_set(NULL, "/x-count", 1));
        NULL_REFUSED(zkr_shared_count_get(NULL, "/x-count", &i32));
        NULL_REFUSED(zkr_lease_guarded_write(NULL, &op, 1));
        NULL_REFUSED(zkr_lease_fencing_token(NULL, &i64));
        NULL_REFUSED(zkr_semaphore_mutex_new(&sm, NULL, "/x"));
        NULL_REFUSED(zkr_semaphore_mutex_acquire(NULL, 0));
        NULL_REFUSED(zkr_semaphore_mutex_fencing_token(NULL, &i64));
        NULL_REFUSED(zkr_semaphore_mutex_set_hold_listener(NULL, on_hold, NULL));
        NULL_REFUSED(zkr_lock_acquire(zkr_mutex_ref(NULL), 0));
        NULL_REFUSED(zkr_lock_fencing_token(zkr_rwlock_read_ref(NULL), &i64));
        NULL_REFUSED(zkr_lock_guarded_write(zkr_semaphore_mutex_ref(NULL), &op, 1));
        NULL_REFUSED(zkr_lock_acquire_async(zkr_mutex_ref(NULL), 0, on_acquired, &at, &id));
        NULL_REFUSED(zkr_hold_fencing_token(NULL, &i64));
        NULL_REFUSED(zkr_hold_guarded_write(NULL, &op, 1));
        NULL_REFUSED(zkr_hold_proclaim(NULL, "v"));
        NULL_REFUSED(zkr_multilock_new(&ml, NULL, 1));
        NULL_REFUSED(zkr_multilock_acquire(NULL, 0));
        NULL_REFUSED(zkr_guarded_write(NULL, "/x", 0, &op, 1));
        NULL_REFUSED(zkr_election_participants(NULL, "/x", ZKR_ELECTION_LATCH, &parts, &count));
        NULL_REFUSED(zkr_election_leader(NULL, "/x", ZKR_ELECTION_LATCH, &parts));
        NULL_REFUSED(zkr_latch_new(&la, NULL, "/x", "id"));
        NULL_REFUSED(zkr_latch_set_policy(NULL, ZKR_LEADER_POLICY_STANDARD));
        NULL_REFUSED(zkr_latch_set_listener(NULL, on_latch, NULL));
        NULL_REFUSED(zkr_latch_start(NULL));
        NULL_REFUSED(zkr_latch_await(NULL, 0));
        NULL_REFUSED(zkr_latch_fencing_token(NULL, &i64));
        NULL_REFUSED(zkr_latch_proclaim(NULL, "v"));
        NULL_REFUSED(zkr_latch_guarded_write(NULL, &op, 1));
        NULL_REFUSED(zkr_latch_close(NULL, ZKR_LATCH_CLOSE_SILENT));
        NULL_REFUSED(zkr_selector_new(&se, NULL, "/x", "id", on_take_leadership, NULL));
        NULL_REFUSED(zkr_selector_set_auto_requeue(NULL, 1));
        NULL_REFUSED(zkr_selector_set_listener(NULL, on_selector, NULL));
        NULL_REFUSED(zkr_selector_start(NULL));
        NULL_REFUSED(zkr_selector_requeue(NULL));
        NULL_REFUSED(zkr_selector_wait_stop(NULL, 0));
        NULL_REFUSED(zkr_selector_interrupt(NULL));
        NULL_REFUSED(zkr_selector_fencing_token(NULL, &i64));
        NULL_REFUSED(zkr_selector_proclaim(NULL, "v"));
        NULL_REFUSED(zkr_selector_guarded_write(NULL, &op, 1));
        NULL_REFUSED(zkr_selector_close(NULL));
        NULL_REFUSED(zkr_leader_acquire_async(NULL, "/x", "id", 0, on_acquired, &at, &id));
        NULL_REFUSED(zkr_observer_new(&ob, NULL, "/x", ZKR_ELECTION_LATCH, on_observe, NULL));
        /* none of them made anything, nor ran a completion */
        CHECK(!m && !l && !s && !sm && !ml && !la && !se && !ob && !lease && !paths && !parts,
              "the refused calls handed nothing out");
        CHECK(atomic_load(&at.calls) == 0 && atomic_load(&rt.calls) == 0,
              "no completion runs for a refused asynchronous call");
    }
}

/* ---- options, process-wide settings, opening ----------------------------------- */

static int section_options(const char *hosts, zkr_client_t **c1, zkr_client_t **c2)
{
    zkr_client_options_t opt;
    unsigned char raw[sizeof(zkr_client_options_t)];
    zkr_client_t *c = NULL;

    printf("# options: zkr_client_options_init, then zkr_client_open\n");
    memset(&opt, 0xAB, sizeof opt);
    zkr_client_options_init(&opt);
    CHECK(opt.size == sizeof(zkr_client_options_t) && opt.session_timeout_ms == 15000 &&
              opt.connect_timeout_ms == 15000 && opt.chroot == NULL && opt.allow_read_only == 0 &&
              opt.auth_scheme == NULL && opt.zk_log_level == -1 && opt.acl_mode == ZKR_ACL_OPEN &&
              opt.acl == NULL && opt.acl_count == 0 && opt.log_fn == NULL && opt.log_level == ZKR_LOG_WARN,
          "zkr_client_options_init: its size and the defaults its header gives");
    memset(raw, 0xAB, sizeof raw);
    zkr_client_options_init_size((zkr_client_options_t *)(void *)raw, 1);
    {
        int untouched = 1;
        for (size_t i = 0; i < sizeof raw; i++)
            untouched &= raw[i] == 0xAB;
        CHECK(untouched, "zkr_client_options_init_size with a size too small writes nothing");
    }
    zkr_client_options_init(NULL);
    CHECK(1, "zkr_client_options_init(NULL) is ignored");

    zkr_client_options_init(&opt);
    opt.log_level = 5;
    check_rc(zkr_client_open(&c, hosts, &opt), ZKR_EINVAL, "zkr_client_open with log_level 5");
    zkr_client_options_init(&opt);
    opt.zk_log_level = 5;
    check_rc(zkr_client_open(&c, hosts, &opt), ZKR_EINVAL, "zkr_client_open with zk_log_level 5");
    CHECK(c == NULL, "a refused zkr_client_open hands out no client");
    zkr_client_options_init(&opt);
    opt.size = sizeof opt + 64; /* a newer header's struct */
    check_rc(zkr_client_open(&c, hosts, &opt), ZKR_EINVAL, "zkr_client_open with a size it cannot read");
    if (c)
        zkr_client_close(c);
    c = NULL;

    printf("# process-wide: zkr_set_zk_log_level\n");
    check_rc(zkr_set_zk_log_level(5), ZKR_EINVAL, "zkr_set_zk_log_level(5)");
    check_rc(zkr_set_zk_log_level(-1), ZKR_EINVAL, "zkr_set_zk_log_level(-1)");
    for (int level = 3; level >= 0; level -= 3) {
        log_told_t told;
        memset(&told, 0, sizeof told);
        check_rc(zkr_set_zk_log_level(level), ZKR_OK, "zkr_set_zk_log_level(%d)", level);
        zkr_client_options_init(&opt);
        opt.zk_log_level = 4; /* this client's threshold lets every line through */
        opt.log_level = ZKR_LOG_INFO;
        opt.log_fn = on_log;
        opt.log_ctx = &told;
        opt.connect_timeout_ms = WAIT_MS;
        int rc = zkr_client_open(&c, hosts, &opt);
        check_rc(rc, ZKR_OK, "zkr_client_open with options (zk_log_level 4, log_fn)");
        if (rc == ZKR_OK) {
            zkr_client_close(c);
            c = NULL;
        }
        if (level)
            CHECK(atomic_load(&told.zk_lines) > 0,
                  "at process-wide level %d the C client's lines come to the client's log_fn (%d lines)", level,
                  atomic_load(&told.zk_lines));
        else
            CHECK(atomic_load(&told.zk_lines) == 0,
                  "at process-wide level 0 the C client makes no line, whatever the option (%d lines)",
                  atomic_load(&told.zk_lines));
        CHECK(atomic_load(&told.no_client) == 0, "log_fn is told its client");
    }
    zkr_set_zk_log_level(g_verbose ? 3 : 1);

    int rc1 = open_client(c1, hosts, WAIT_MS), rc2 = open_client(c2, hosts, WAIT_MS);
    check_rc(rc1, ZKR_OK, "zkr_client_open (first client)");
    check_rc(rc2, ZKR_OK, "zkr_client_open (second client)");
    if (rc1 != ZKR_OK || rc2 != ZKR_OK)
        return -1;
    int64_t sid = 0, sto = 0;
    check_rc(zkr_client_wait_connected(*c1, WAIT_MS), ZKR_OK, "zkr_client_wait_connected");
    CHECK(zkr_client_is_connected(*c1) == 1 && zkr_client_state(*c1) == ZKR_STATE_CONNECTED,
          "zkr_client_is_connected 1, zkr_client_state CONNECTED");
    int rc = zkr_client_session(*c1, &sid, NULL);
    check_rc(rc, ZKR_OK, "zkr_client_session");
    CHECK(sid != 0, "zkr_client_session: the session id (%llx)", (unsigned long long)sid);
    rc = zkr_client_session_timeout(*c1, &sto);
    check_rc(rc, ZKR_OK, "zkr_client_session_timeout");
    CHECK(sto > 0, "zkr_client_session_timeout: the negotiated timeout (%lld ms)", (long long)sto);
    check_rc(zkr_client_with_handle(*c1, with_handle_fn, NULL), ZKR_OK,
             "zkr_client_with_handle returns what its function returned");
    check_rc(zkr_client_with_handle(*c1, close_in_handle_fn, *c1), ZKR_EDEADLK,
             "zkr_client_close from the function zkr_client_with_handle runs");
    CHECK(zkr_client_is_connected(*c1) == 1, "... did nothing: the client is still connected");
    return 0;
}

/* ---- getters' ownership: node paths, participants, created paths ---------------- */

static void section_getters(zkr_client_t *c)
{
    char dir[256], dir2[256], dir3[256], dir4[256], leases_dir[300];
    char *a = NULL, *b = NULL;
    int ra, rb;
    printf("# getters: every *_node_path hands out a copy the caller frees with zkr_free\n");

    /* mutex */
    zkr_mutex_t *m = NULL;
    path_of(dir, sizeof dir, "getters-mutex");
    check_rc(zkr_mutex_new(&m, c, dir), ZKR_OK, "zkr_mutex_new");
    if (m) {
        CHECK(strcmp(zkr_lock_kind(zkr_mutex_ref(m)), "mutex") == 0, "zkr_lock_kind: \"mutex\" (lent)");
        PATH_REFUSED(ZKR_ENOTOWNER, zkr_mutex_node_path(m, &p_));
        check_rc(zkr_mutex_acquire(m, WAIT_MS), ZKR_OK, "zkr_mutex_acquire");
        ra = zkr_mutex_node_path(m, &a);
        rb = zkr_mutex_node_path(m, &b);
        char *node = a ? strdup(a) : NULL;
        owned_paths("zkr_mutex_node_path", dir, ra, a, rb, b);
        a = b = NULL;
        ra = zkr_lock_node_path(zkr_mutex_ref(m), &a);
        rb = zkr_lock_node_path(zkr_mutex_ref(m), &b);
        owned_paths("zkr_lock_node_path (mutex)", dir, ra, a, rb, b);
        a = b = NULL;
        check_rc(zkr_mutex_node_path(m, NULL), ZKR_EINVAL, "zkr_mutex_node_path(m, NULL)");
        check_rc(zkr_lock_node_path(zkr_mutex_ref(m), NULL), ZKR_EINVAL, "zkr_lock_node_path(ref, NULL)");
        char **paths = NULL;
        size_t n = 0;
        check_rc(zkr_mutex_participants(m, &paths, &n), ZKR_OK, "zkr_mutex_participants");
        CHECK(n == 1 && paths && node && strcmp(paths[0], node) == 0,
              "zkr_mutex_participants: the holder's node (freed with zkr_strings_free)");
        zkr_strings_free(paths, n);

        /* zkr_op_t.created: the caller's, freed with zkr_free or zkr_ops_clear */
        char data_dir[300], item[320];
        snprintf(data_dir, sizeof data_dir, "%s/data", g_base);
        snprintf(item, sizeof item, "%s/item-", data_dir);
        zkr_op_t ops[2] = {ZKR_OP_CREATE_INIT(data_dir, "", 0, ZKR_CREATE_PERSISTENT),
                           ZKR_OP_CREATE_INIT(item, "x", 1, ZKR_CREATE_SEQUENTIAL)};
        check_rc(zkr_mutex_guarded_write(m, ops, 2), ZKR_OK, "zkr_mutex_guarded_write of two creates");
        CHECK(ops[0].rc == ZKR_OK && ops[0].created && strcmp(ops[0].created, data_dir) == 0,
              "zkr_op_t.created of a create: its path (%s)", ops[0].created ? ops[0].created : "NULL");
        CHECK(ops[1].rc == ZKR_OK && ops[1].created && strncmp(ops[1].created, item, strlen(item)) == 0 &&
                  strlen(ops[1].created) > strlen(item),
              "zkr_op_t.created of a sequential create: its path with the sequence (%s)",
              ops[1].created ? ops[1].created : "NULL");
        char created_item[400];
        snprintf(created_item, sizeof created_item, "%s", ops[1].created ? ops[1].created : "/none");
        zkr_free(ops[0].created); /* one freed with zkr_free ... */
        ops[0].created = NULL;
        zkr_ops_clear(ops, 2); /* ... the other with zkr_ops_clear */
        CHECK(ops[0].created == NULL && ops[1].created == NULL, "zkr_ops_clear frees and sets created to NULL");
        zkr_op_t dels[2] = {ZKR_OP_DELETE_INIT(created_item, -1), ZKR_OP_DELETE_INIT(data_dir, -1)};
        check_rc(zkr_mutex_guarded_write(m, dels, 2), ZKR_OK, "zkr_mutex_guarded_write of two deletes");
        CHECK(dels[0].created == NULL && dels[1].created == NULL, "zkr_op_t.created is NULL for a delete");
        zkr_ops_clear(dels, 2);

        check_rc(zkr_mutex_release(m), ZKR_OK, "zkr_mutex_release");
        PATH_REFUSED(ZKR_ENOTOWNER, zkr_mutex_node_path(m, &p_));
        PATH_REFUSED(ZKR_ENOTOWNER, zkr_lock_node_path(zkr_mutex_ref(m), &p_));
        free(node);
        zkr_mutex_free(m);
    }

    /* read/write lock, both halves */
    zkr_rwlock_t *l = NULL;
    path_of(dir2, sizeof dir2, "getters-rwlock");
    check_rc(zkr_rwlock_new(&l, c, dir2), ZKR_OK, "zkr_rwlock_new");
    if (l) {
        CHECK(strcmp(zkr_lock_kind(zkr_rwlock_read_ref(l)), "read") == 0 &&
                  strcmp(zkr_lock_kind(zkr_rwlock_write_ref(l)), "write") == 0,
              "zkr_lock_kind: \"read\", \"write\" (lent)");
        PATH_REFUSED(ZKR_ENOTOWNER, zkr_rwlock_write_node_path(l, &p_));
        PATH_REFUSED(ZKR_ENOTOWNER, zkr_rwlock_read_node_path(l, &p_));
        check_rc(zkr_rwlock_write_acquire(l, WAIT_MS), ZKR_OK, "zkr_rwlock_write_acquire");
        ra = zkr_rwlock_write_node_path(l, &a);
        rb = zkr_lock_node_path(zkr_rwlock_write_ref(l), &b);
        owned_paths("zkr_rwlock_write_node_path, zkr_lock_node_path (write)", dir2, ra, a, rb, b);
        a = b = NULL;
        PATH_REFUSED(ZKR_ENOTOWNER, zkr_rwlock_read_node_path(l, &p_));
        check_rc(zkr_rwlock_read_acquire(l, WAIT_MS), ZKR_OK, "zkr_rwlock_read_acquire (a downgrade)");
        ra = zkr_rwlock_read_node_path(l, &a);
        rb = zkr_lock_node_path(zkr_rwlock_read_ref(l), &b);
        owned_paths("zkr_rwlock_read_node_path, zkr_lock_node_path (read)", dir2, ra, a, rb, b);
        a = b = NULL;
        check_rc(zkr_rwlock_read_node_path(l, NULL), ZKR_EINVAL, "zkr_rwlock_read_node_path(l, NULL)");
        check_rc(zkr_rwlock_write_node_path(l, NULL), ZKR_EINVAL, "zkr_rwlock_write_node_path(l, NULL)");
        char **paths = NULL;
        size_t n = 0;
        check_rc(zkr_rwlock_participants(l, &paths, &n), ZKR_OK, "zkr_rwlock_participants");
        CHECK(n == 2 && paths && under(paths[0], dir2) && under(paths[1], dir2),
              "zkr_rwlock_participants: the write and the read node (freed with zkr_strings_free)");
        zkr_strings_free(paths, n);
        check_rc(zkr_rwlock_read_release(l), ZKR_OK, "zkr_rwlock_read_release");
        check_rc(zkr_rwlock_write_release(l), ZKR_OK, "zkr_rwlock_write_release");
        zkr_rwlock_free(l);
    }

    /* semaphore mutex */
    zkr_semaphore_mutex_t *sm = NULL;
    path_of(dir3, sizeof dir3, "getters-smutex");
    check_rc(zkr_semaphore_mutex_new(&sm, c, dir3), ZKR_OK, "zkr_semaphore_mutex_new");
    if (sm) {
        CHECK(strcmp(zkr_lock_kind(zkr_semaphore_mutex_ref(sm)), "semaphore-mutex") == 0,
              "zkr_lock_kind: \"semaphore-mutex\" (lent)");
        PATH_REFUSED(ZKR_ENOTOWNER, zkr_semaphore_mutex_node_path(sm, &p_));
        check_rc(zkr_semaphore_mutex_acquire(sm, WAIT_MS), ZKR_OK, "zkr_semaphore_mutex_acquire");
        ra = zkr_semaphore_mutex_node_path(sm, &a);
        rb = zkr_lock_node_path(zkr_semaphore_mutex_ref(sm), &b);
        owned_paths("zkr_semaphore_mutex_node_path, zkr_lock_node_path (semaphore mutex)", dir3, ra, a, rb, b);
        a = b = NULL;
        check_rc(zkr_semaphore_mutex_node_path(sm, NULL), ZKR_EINVAL, "zkr_semaphore_mutex_node_path(m, NULL)");
        check_rc(zkr_semaphore_mutex_release(sm), ZKR_OK, "zkr_semaphore_mutex_release");
        PATH_REFUSED(ZKR_ENOTOWNER, zkr_semaphore_mutex_node_path(sm, &p_));
        zkr_semaphore_mutex_free(sm);
    }

    /* lease */
    zkr_semaphore_t *s = NULL;
    zkr_lease_t *lease = NULL;
    path_of(dir4, sizeof dir4, "getters-semaphore");
    snprintf(leases_dir, sizeof leases_dir, "%s/leases", dir4);
    check_rc(zkr_semaphore_new(&s, c, dir4, 2), ZKR_OK, "zkr_semaphore_new");
    if (s) {
        check_rc(zkr_semaphore_acquire(s, WAIT_MS, &lease), ZKR_OK, "zkr_semaphore_acquire");
        ra = zkr_lease_node_path(lease, &a);
        rb = zkr_lease_node_path(lease, &b);
        char *node = a ? strdup(a) : NULL;
        owned_paths("zkr_lease_node_path", leases_dir, ra, a, rb, b);
        a = b = NULL;
        check_rc(zkr_lease_node_path(lease, NULL), ZKR_EINVAL, "zkr_lease_node_path(lease, NULL)");
        char **paths = NULL;
        size_t n = 0;
        check_rc(zkr_semaphore_participants(s, &paths, &n), ZKR_OK, "zkr_semaphore_participants");
        CHECK(n == 1 && paths && node && strcmp(paths[0], node) == 0,
              "zkr_semaphore_participants: the lease's node (freed with zkr_strings_free)");
        zkr_strings_free(paths, n);
        free(node);
        check_rc(zkr_lease_release(lease), ZKR_OK, "zkr_lease_release");
        zkr_semaphore_free(s);
    }
}

/* ---- every callback gets its object: hold listeners, told LOST ---------------------- */

typedef enum lk_kind { LK_MUTEX, LK_READ, LK_WRITE, LK_SMUTEX } lk_kind_t;
static const char *const lk_names[] = {"mutex", "read", "write", "semaphore mutex"};

/* A hold of `ref` (the calling thread's), its node deleted by another
 * session: the hold listener set on its object is told LOST with that
 * lock (and its node); release then says ZKR_ELOST. */
static void lost_hold(zkr_client_t *other, lk_kind_t k, zkr_lock_ref_t ref, zkr_lock_ref_t not_ref, hold_told_t *t)
{
    char *node = NULL;
    memset(t, 0, sizeof *t);
    t->expect = ref;
    t->other = not_ref;
    check_rc(zkr_lock_acquire(ref, WAIT_MS), ZKR_OK, "%s: acquire", lk_names[k]);
    int rc = zkr_lock_node_path(ref, &node);
    check_rc(rc, ZKR_OK, "%s: zkr_lock_node_path", lk_names[k]);
    if (rc != ZKR_OK) {
        zkr_lock_release(ref);
        return;
    }
    check_rc(delete_from(other, node), ZKR_OK, "%s: another session deletes the holder's node", lk_names[k]);
    CHECK(wait_int(&t->lost, 1, WAIT_MS), "%s: its hold listener is told LOST", lk_names[k]);
    CHECK(atomic_load(&t->wrong) == 0 && atomic_load(&t->calls) >= 1,
          "%s: the hold listener is told the lock (zkr_lock_ref_equal with the %s ref), %d call(s)", lk_names[k],
          lk_names[k], atomic_load(&t->calls));
    if (not_ref.obj)
        CHECK(atomic_load(&t->other_match) == 0, "%s: ... and not the other half of the read/write lock",
              lk_names[k]);
    CHECK(strcmp(t->node, node) == 0, "%s: the hold listener is told the hold's node path", lk_names[k]);
    CHECK(zkr_lock_hold_state(ref) == ZKR_HOLD_LOST && !zkr_lock_is_held(ref), "%s: the hold is LOST, not held",
          lk_names[k]);
    check_rc(zkr_lock_release(ref), ZKR_ELOST, "%s: release of the lost hold", lk_names[k]);
    zkr_free(node);
}

static void section_hold_listeners(zkr_client_t *c, zkr_client_t *other)
{
    char p1[256], p2[256], p3[256], p4[256], p5[256];
    hold_told_t t;
    zkr_lock_ref_t none = {NULL, NULL};
    printf("# every callback gets its object: hold listeners (node deleted by another session)\n");

    zkr_mutex_t *m = NULL;
    if (zkr_mutex_new(&m, c, path_of(p1, sizeof p1, "listen-mutex")) == ZKR_OK) {
        check_rc(zkr_mutex_set_hold_listener(m, on_hold, &t), ZKR_OK, "zkr_mutex_set_hold_listener");
        lost_hold(other, LK_MUTEX, zkr_mutex_ref(m), none, &t);

        /* a hold keeps the listener its object had when it was granted */
        hold_told_t later;
        char *node = NULL;
        memset(&later, 0, sizeof later);
        memset(&t, 0, sizeof t);
        t.expect = later.expect = zkr_mutex_ref(m);
        check_rc(zkr_mutex_acquire(m, WAIT_MS), ZKR_OK, "mutex: acquire (listener A)");
        check_rc(zkr_mutex_set_hold_listener(m, on_hold, &later), ZKR_OK, "mutex: listener B set while held");
        if (zkr_mutex_node_path(m, &node) == ZKR_OK) {
            check_rc(delete_from(other, node), ZKR_OK, "mutex: another session deletes the holder's node");
            CHECK(wait_int(&t.lost, 1, WAIT_MS) && atomic_load(&t.wrong) == 0,
                  "mutex: the hold's listener (A, set when it was granted) is told LOST");
            sleep_ms(200);
            CHECK(atomic_load(&later.calls) == 0, "mutex: the listener set after the grant (B) is told nothing");
            check_rc(zkr_mutex_release(m), ZKR_ELOST, "mutex: release of the lost hold");
        } else {
            CHECK(0, "mutex: zkr_mutex_node_path");
            zkr_mutex_release(m);
        }
        zkr_free(node);
        zkr_mutex_free(m);
    } else {
        CHECK(0, "zkr_mutex_new");
    }

    zkr_rwlock_t *l = NULL;
    if (zkr_rwlock_new(&l, c, path_of(p2, sizeof p2, "listen-rwlock")) == ZKR_OK) {
        check_rc(zkr_rwlock_set_hold_listener(l, on_hold, &t), ZKR_OK, "zkr_rwlock_set_hold_listener");
        CHECK(!zkr_lock_ref_equal(zkr_rwlock_read_ref(l), zkr_rwlock_write_ref(l)) &&
                  zkr_lock_ref_equal(zkr_rwlock_read_ref(l), zkr_rwlock_read_ref(l)),
              "zkr_lock_ref_equal tells the read half from the write half");
        lost_hold(other, LK_WRITE, zkr_rwlock_write_ref(l), zkr_rwlock_read_ref(l), &t);
        lost_hold(other, LK_READ, zkr_rwlock_read_ref(l), zkr_rwlock_write_ref(l), &t);
        zkr_rwlock_free(l);
    } else {
        CHECK(0, "zkr_rwlock_new");
    }

    zkr_semaphore_mutex_t *sm = NULL;
    if (zkr_semaphore_mutex_new(&sm, c, path_of(p3, sizeof p3, "listen-smutex")) == ZKR_OK) {
        check_rc(zkr_semaphore_mutex_set_hold_listener(sm, on_hold, &t), ZKR_OK,
                 "zkr_semaphore_mutex_set_hold_listener");
        lost_hold(other, LK_SMUTEX, zkr_semaphore_mutex_ref(sm), none, &t);
        zkr_semaphore_mutex_free(sm);
    } else {
        CHECK(0, "zkr_semaphore_mutex_new");
    }

    /* a revocation request's function is told its mutex */
    zkr_mutex_t *rm = NULL, *rm2 = NULL;
    char p6[256];
    if (zkr_mutex_new(&rm, c, path_of(p6, sizeof p6, "listen-revoke")) == ZKR_OK &&
        zkr_mutex_new(&rm2, c, p6) == ZKR_OK) {
        revoke_told_t rv;
        char *node = NULL;
        memset(&rv, 0, sizeof rv);
        rv.expect = rm;
        CHECK(!zkr_lock_ref_equal(zkr_mutex_ref(rm), zkr_mutex_ref(rm2)),
              "zkr_lock_ref_equal: two mutex objects on one path are two locks");
        check_rc(zkr_mutex_make_revocable(rm, on_revoke, &rv), ZKR_OK, "zkr_mutex_make_revocable");
        check_rc(zkr_mutex_acquire(rm, WAIT_MS), ZKR_OK, "revocable mutex: acquire");
        if (zkr_mutex_node_path(rm, &node) == ZKR_OK) {
            check_rc(zkr_revoke_request(other, node), ZKR_OK, "zkr_revoke_request from another session");
            CHECK(wait_int(&rv.calls, 1, WAIT_MS) && atomic_load(&rv.wrong) == 0,
                  "the revocation function (zkr_revoke_fn) is told its mutex");
        } else {
            CHECK(0, "revocable mutex: zkr_mutex_node_path");
        }
        zkr_free(node);
        check_rc(zkr_mutex_release(rm), ZKR_OK, "revocable mutex: release");
    } else {
        CHECK(0, "zkr_mutex_new");
    }
    zkr_mutex_free(rm);
    zkr_mutex_free(rm2);

    /* a semaphore's listener is told the semaphore */
    zkr_semaphore_t *s = NULL;
    lease_told_t lt;
    memset(&lt, 0, sizeof lt);
    if (zkr_semaphore_new(&s, c, path_of(p4, sizeof p4, "listen-semaphore"), 3) == ZKR_OK) {
        zkr_lease_t *lease = NULL;
        char *node = NULL;
        lt.expect = s;
        check_rc(zkr_semaphore_set_hold_listener(s, on_lease_state, &lt), ZKR_OK, "zkr_semaphore_set_hold_listener");
        check_rc(zkr_semaphore_acquire(s, WAIT_MS, &lease), ZKR_OK, "lease: zkr_semaphore_acquire");
        if (lease && zkr_lease_node_path(lease, &node) == ZKR_OK) {
            check_rc(delete_from(other, node), ZKR_OK, "lease: another session deletes its node");
            CHECK(wait_int(&lt.lost, 1, WAIT_MS), "lease: the semaphore's hold listener is told LOST");
            CHECK(atomic_load(&lt.wrong) == 0, "lease: the listener (zkr_lease_fn) is told its semaphore");
            CHECK(strcmp(lt.node, node) == 0, "lease: ... and the lease's node path");
            CHECK(zkr_lease_hold_state(lease) == ZKR_HOLD_LOST, "lease: zkr_lease_hold_state LOST");
            check_rc(zkr_lease_release(lease), ZKR_ELOST, "lease: release of the lost lease");
        } else {
            CHECK(0, "lease: acquired, with its node path");
            zkr_lease_release(lease);
        }
        zkr_free(node);

        /* a lease that outlives its semaphore is told nothing more */
        memset(&lt, 0, sizeof lt);
        lt.expect = s;
        lease = NULL;
        node = NULL;
        check_rc(zkr_semaphore_acquire(s, WAIT_MS, &lease), ZKR_OK, "lease: zkr_semaphore_acquire (again)");
        zkr_semaphore_free(s);
        if (lease && zkr_lease_node_path(lease, &node) == ZKR_OK) {
            check_rc(delete_from(other, node), ZKR_OK, "lease after zkr_semaphore_free: its node deleted");
            int64_t end = now_ms() + WAIT_MS;
            while (zkr_lease_hold_state(lease) != ZKR_HOLD_LOST && now_ms() < end)
                sleep_ms(5);
            CHECK(zkr_lease_hold_state(lease) == ZKR_HOLD_LOST, "lease after zkr_semaphore_free: LOST");
            sleep_ms(300);
            CHECK(atomic_load(&lt.calls) == 0,
                  "lease after zkr_semaphore_free: the freed semaphore's listener is told nothing");
            check_rc(zkr_lease_release(lease), ZKR_ELOST, "lease after zkr_semaphore_free: release");
        } else {
            CHECK(0, "lease: acquired again, with its node path");
            zkr_lease_release(lease);
        }
        zkr_free(node);
    } else {
        CHECK(0, "zkr_semaphore_new");
    }

    /* an asynchronous hold keeps its object's listener; freeing the object turns it off */
    m = NULL;
    if (zkr_mutex_new(&m, c, path_of(p5, sizeof p5, "listen-async")) == ZKR_OK) {
        acq_told_t at;
        char *node = NULL;
        memset(&at, 0, sizeof at);
        memset(&t, 0, sizeof t);
        t.expect = zkr_mutex_ref(m);
        zkr_mutex_set_hold_listener(m, on_hold, &t);
        zkr_client_set_dispatch(c, ZKR_DISPATCH_THREAD);
        uint64_t id = 0;
        check_rc(zkr_lock_acquire_async(zkr_mutex_ref(m), WAIT_MS, on_acquired, &at, &id), ZKR_OK,
                 "async mutex hold: zkr_lock_acquire_async");
        CHECK(wait_int(&at.done, 1, WAIT_MS) && at.rc == ZKR_OK && at.hold, "async mutex hold: granted");
        if (at.hold && zkr_hold_node_path(at.hold, &node) == ZKR_OK) {
            check_rc(delete_from(other, node), ZKR_OK, "async mutex hold: another session deletes its node");
            CHECK(wait_int(&t.lost, 1, WAIT_MS) && atomic_load(&t.wrong) == 0,
                  "async mutex hold: the mutex's hold listener is told LOST with the mutex");
            CHECK(zkr_hold_state(at.hold) == ZKR_HOLD_LOST, "async mutex hold: zkr_hold_state LOST");
            check_rc(zkr_hold_release(at.hold), ZKR_ELOST, "async mutex hold: zkr_hold_release");
        } else {
            CHECK(0, "async mutex hold: its node path");
            if (at.hold)
                zkr_hold_release(at.hold);
        }
        zkr_free(node);
        node = NULL;

        /* freed object: its listener is off for the hold that outlives it */
        memset(&at, 0, sizeof at);
        memset(&t, 0, sizeof t);
        t.expect = zkr_mutex_ref(m);
        check_rc(zkr_lock_acquire_async(zkr_mutex_ref(m), WAIT_MS, on_acquired, &at, &id), ZKR_OK,
                 "async mutex hold (again): zkr_lock_acquire_async");
        CHECK(wait_int(&at.done, 1, WAIT_MS) && at.rc == ZKR_OK && at.hold, "async mutex hold (again): granted");
        zkr_mutex_free(m);
        if (at.hold && zkr_hold_node_path(at.hold, &node) == ZKR_OK) {
            check_rc(delete_from(other, node), ZKR_OK, "hold after zkr_mutex_free: its node deleted");
            int64_t end = now_ms() + WAIT_MS;
            while (zkr_hold_state(at.hold) != ZKR_HOLD_LOST && now_ms() < end)
                sleep_ms(5);
            CHECK(zkr_hold_state(at.hold) == ZKR_HOLD_LOST, "hold after zkr_mutex_free: LOST");
            sleep_ms(300);
            CHECK(atomic_load(&t.calls) == 0, "hold after zkr_mutex_free: the freed mutex's listener is told nothing");
            check_rc(zkr_hold_release(at.hold), ZKR_ELOST, "hold after zkr_mutex_free: zkr_hold_release");
        } else {
            CHECK(0, "async mutex hold (again): its node path");
            if (at.hold)
                zkr_hold_release(at.hold);
        }
        zkr_free(node);
        zkr_client_set_dispatch(c, ZKR_DISPATCH_LOOP);
    } else {
        CHECK(0, "zkr_mutex_new");
    }
}

/* ---- every callback gets its object: leadership, observers ---------------------------- */

static void section_leadership(zkr_client_t *c)
{
    char lpath[256], spath[256];
    char *a = NULL, *b = NULL;
    int ra, rb;
    printf("# every callback gets its object: latch and selector listeners, take-leadership, observer\n");

    zkr_latch_t *la = NULL;
    latch_told_t lt;
    memset(&lt, 0, sizeof lt);
    path_of(lpath, sizeof lpath, "latch");
    check_rc(zkr_latch_new(&la, c, lpath, "api-latch"), ZKR_OK, "zkr_latch_new");
    if (la) {
        lt.expect = la;
        check_rc(zkr_latch_await(la, 0), ZKR_ESTATE, "zkr_latch_await before zkr_latch_start");
        PATH_REFUSED(ZKR_ENOTLEADER, zkr_latch_node_path(la, &p_));
        check_rc(zkr_latch_set_listener(la, on_latch, &lt), ZKR_OK, "zkr_latch_set_listener");
        check_rc(zkr_latch_start(la), ZKR_OK, "zkr_latch_start");
        check_rc(zkr_latch_await(la, WAIT_MS), ZKR_OK, "zkr_latch_await");
        CHECK(wait_int(&lt.leader, 1, WAIT_MS) && atomic_load(&lt.wrong) == 0,
              "the latch listener (zkr_latch_fn) is told its latch: leader");
        CHECK(zkr_latch_has_leadership(la) == 1 && strcmp(zkr_latch_id(la), "api-latch") == 0,
              "zkr_latch_has_leadership 1, zkr_latch_id its id");
        ra = zkr_latch_node_path(la, &a);
        rb = zkr_latch_node_path(la, &b);
        char *node = a ? strdup(a) : NULL;
        owned_paths("zkr_latch_node_path", lpath, ra, a, rb, b);
        a = b = NULL;
        check_rc(zkr_latch_node_path(la, NULL), ZKR_EINVAL, "zkr_latch_node_path(l, NULL)");

        /* participants and leader: freed with zkr_participants_free */
        zkr_participant_t *ps = NULL, *leader = NULL;
        size_t n = 0;
        check_rc(zkr_election_participants(c, lpath, ZKR_ELECTION_LATCH, &ps, &n), ZKR_OK,
                 "zkr_election_participants");
        CHECK(n == 1 && ps && ps[0].is_leader && node && strcmp(ps[0].node_path, node) == 0 &&
                  strcmp(ps[0].id, "api-latch") == 0,
              "zkr_election_participants: the latch, leading (freed with zkr_participants_free)");
        zkr_participants_free(ps, n);
        check_rc(zkr_election_leader(c, lpath, ZKR_ELECTION_LATCH, &leader), ZKR_OK, "zkr_election_leader");
        CHECK(leader && node && strcmp(leader->node_path, node) == 0, "zkr_election_leader: the latch");
        zkr_participants_free(leader, leader ? 1 : 0);

        /* an observer: told its observer, from the first call (which may
         * come before zkr_observer_new returns) */
        zkr_observer_t *ob = NULL;
        obs_told_t ot;
        memset(&ot, 0, sizeof ot);
        check_rc(zkr_observer_new(&ob, c, lpath, ZKR_ELECTION_LATCH, on_observe, &ot), ZKR_OK, "zkr_observer_new");
        if (ob) {
            CHECK(wait_int(&ot.with_leader, 1, WAIT_MS), "the observer is told the leader found at the start");
            CHECK(atomic_load(&ot.first) == ob, "the observer's function (zkr_observe_fn) is told its observer");
            CHECK(node && strcmp(ot.leader_node, node) == 0 && strcmp(ot.leader_id, "api-latch") == 0,
                  "the observer is told the latch's node and id");
        }

        check_rc(zkr_latch_close(la, ZKR_LATCH_CLOSE_NOTIFY_LEADER), ZKR_OK, "zkr_latch_close (NOTIFY_LEADER)");
        CHECK(atomic_load(&lt.not_leader) >= 1 && atomic_load(&lt.wrong) == 0,
              "the latch listener is told its latch: not leader (within close)");
        PATH_REFUSED(ZKR_ENOTLEADER, zkr_latch_node_path(la, &p_));
        if (ob) {
            CHECK(wait_int(&ot.without_leader, 1, WAIT_MS), "the observer is told nobody leads");
            CHECK(atomic_load(&ot.changed_object) == 0 && atomic_load(&ot.first) == ob,
                  "every call of the observer's function is told the same observer");
            zkr_observer_free(ob);
        }
        check_rc(zkr_latch_close(la, ZKR_LATCH_CLOSE_SILENT), ZKR_ESTATE, "zkr_latch_close again");
        check_rc(zkr_latch_set_listener(la, on_latch, &lt), ZKR_ESTATE, "zkr_latch_set_listener after close");
        free(node);
        zkr_latch_free(la);
    }

    /* a listener set while the latch already leads is told what comes
     * after the call, nothing again */
    la = NULL;
    memset(&lt, 0, sizeof lt);
    check_rc(zkr_latch_new(&la, c, lpath, NULL), ZKR_OK, "zkr_latch_new (id NULL)");
    if (la) {
        lt.expect = la;
        CHECK(strcmp(zkr_latch_id(la), "") == 0, "zkr_latch_id of a latch made with id NULL: \"\"");
        check_rc(zkr_latch_start(la), ZKR_OK, "zkr_latch_start (no listener)");
        check_rc(zkr_latch_await(la, WAIT_MS), ZKR_OK, "zkr_latch_await");
        check_rc(zkr_latch_start(la), ZKR_ESTATE, "zkr_latch_start again");
        check_rc(zkr_latch_set_policy(la, ZKR_LEADER_POLICY_SESSION), ZKR_ESTATE,
                 "zkr_latch_set_policy once started");
        check_rc(zkr_latch_set_listener(la, on_latch, &lt), ZKR_OK, "zkr_latch_set_listener while leading");
        sleep_ms(300);
        CHECK(atomic_load(&lt.leader) == 0, "a listener set while leading is not told \"leader\" again");
        check_rc(zkr_latch_close(la, ZKR_LATCH_CLOSE_NOTIFY_LEADER), ZKR_OK, "zkr_latch_close (NOTIFY_LEADER)");
        CHECK(atomic_load(&lt.not_leader) == 1 && atomic_load(&lt.wrong) == 0,
              "it is told \"not leader\" at close, with its latch");
        zkr_latch_free(la);
    }

    /* selector */
    zkr_selector_t *se = NULL;
    take_told_t tt;
    selector_told_t st;
    memset(&tt, 0, sizeof tt);
    memset(&st, 0, sizeof st);
    path_of(spath, sizeof spath, "selector");
    check_rc(zkr_selector_new(&se, c, spath, "api-selector", on_take_leadership, &tt), ZKR_OK, "zkr_selector_new");
    if (se) {
        st.expect = se;
        PATH_REFUSED(ZKR_ENOTLEADER, zkr_selector_node_path(se, &p_));
        check_rc(zkr_selector_set_listener(se, on_selector, &st), ZKR_OK, "zkr_selector_set_listener");
        check_rc(zkr_selector_start(se), ZKR_OK, "zkr_selector_start");
        CHECK(wait_int(&tt.running, 1, WAIT_MS), "the selector's take-leadership function runs");
        CHECK(atomic_load(&tt.got) == se, "the take-leadership function is told its selector");
        CHECK(wait_int(&st.leader, 1, WAIT_MS) && atomic_load(&st.wrong) == 0,
              "the selector listener (zkr_selector_fn) is told its selector: leader");
        int64_t token = 0;
        check_rc(zkr_selector_fencing_token(se, &token), ZKR_OK, "zkr_selector_fencing_token");
        CHECK(token == tt.token && token > 0, "the term's token is the one the callback was told");
        CHECK(zkr_selector_has_leadership(se) == 1 && zkr_selector_should_stop(se) == 0,
              "zkr_selector_has_leadership 1, zkr_selector_should_stop 0");
        ra = zkr_selector_node_path(se, &a);
        rb = zkr_selector_node_path(se, &b);
        owned_paths("zkr_selector_node_path", spath, ra, a, rb, b);
        a = b = NULL;
        check_rc(zkr_selector_node_path(se, NULL), ZKR_EINVAL, "zkr_selector_node_path(s, NULL)");
        check_rc(zkr_selector_interrupt(se), ZKR_OK, "zkr_selector_interrupt");
        CHECK(wait_int(&tt.returned, 1, WAIT_MS), "the take-leadership function returns when told to stop");
        check_rc(tt.stop_rc, ZKR_OK, "zkr_selector_wait_stop in the callback, interrupted");
        check_rc(tt.close_rc, ZKR_EDEADLK, "zkr_selector_close from the selector's own callback");
        CHECK(wait_int(&st.not_leader, 1, WAIT_MS) && atomic_load(&st.wrong) == 0,
              "the selector listener is told its selector: not leader");
        check_rc(zkr_selector_close(se), ZKR_OK, "zkr_selector_close");
        check_rc(zkr_selector_close(se), ZKR_ESTATE, "zkr_selector_close again");
        check_rc(zkr_selector_set_listener(se, on_selector, &st), ZKR_ESTATE, "zkr_selector_set_listener after close");
        PATH_REFUSED(ZKR_ENOTLEADER, zkr_selector_node_path(se, &p_));
        zkr_selector_free(se);
    }
}

/* ---- asynchronous acquires: the completion gets the acquire id ------------------------ */

static void section_async(zkr_client_t *c, zkr_client_t *c2)
{
    char p1[256], p2[256], p3[256];
    char *a = NULL, *b = NULL;
    uint64_t id = 0;
    acq_told_t at;
    rel_told_t rt;
    printf("# every callback gets its object: asynchronous acquires' completions get the acquire id\n");

    check_rc(zkr_client_set_dispatch(c, ZKR_DISPATCH_THREAD), ZKR_OK, "zkr_client_set_dispatch THREAD");
    check_rc(zkr_client_set_dispatch(c, (zkr_dispatch_mode_t)7), ZKR_EINVAL, "zkr_client_set_dispatch unknown mode");

    zkr_mutex_t *m = NULL, *m2 = NULL;
    path_of(p1, sizeof p1, "async-mutex");
    if (zkr_mutex_new(&m, c, p1) == ZKR_OK && zkr_mutex_new(&m2, c2, p1) == ZKR_OK) {
        /* granted */
        memset(&at, 0, sizeof at);
        id = 0;
        check_rc(zkr_lock_acquire_async(zkr_mutex_ref(m), WAIT_MS, on_acquired, &at, &id), ZKR_OK,
                 "zkr_lock_acquire_async (mutex, THREAD dispatch)");
        CHECK(wait_int(&at.done, 1, WAIT_MS), "its completion runs");
        CHECK(id != 0 && at.id == id, "the completion is told the acquire id the call stored (%llu, told %llu)",
              (unsigned long long)id, (unsigned long long)at.id);
        CHECK(at.rc == ZKR_OK && at.hold && strcmp(zkr_hold_kind(at.hold), "mutex") == 0 &&
                  zkr_hold_state(at.hold) == ZKR_HOLD_SAFE,
              "granted: a SAFE hold of kind \"mutex\"");
        CHECK(zkr_mutex_is_held(m) == 0, "an asynchronous hold belongs to no thread (zkr_mutex_is_held 0)");
        if (at.hold) {
            int64_t tok = 0;
            int trc = zkr_hold_fencing_token(at.hold, &tok);
            check_rc(trc, ZKR_OK, "zkr_hold_fencing_token");
            CHECK(tok > 0, "zkr_hold_fencing_token: the node's czxid (%lld)", (long long)tok);
            int ra = zkr_hold_node_path(at.hold, &a), rb = zkr_hold_node_path(at.hold, &b);
            owned_paths("zkr_hold_node_path", p1, ra, a, rb, b);
            a = b = NULL;
            check_rc(zkr_hold_node_path(at.hold, NULL), ZKR_EINVAL, "zkr_hold_node_path(hold, NULL)");
            check_rc(zkr_hold_release_async(at.hold, NULL, &rt), ZKR_EINVAL, "zkr_hold_release_async with fn NULL");
            CHECK(zkr_hold_state(at.hold) == ZKR_HOLD_SAFE, "... did nothing: the hold is still SAFE");
            memset(&rt, 0, sizeof rt);
            check_rc(zkr_hold_release_async(at.hold, on_released, &rt), ZKR_OK, "zkr_hold_release_async");
            CHECK(wait_int(&rt.done, 1, WAIT_MS) && rt.rc == ZKR_OK && atomic_load(&rt.calls) == 1,
                  "its completion runs once with ZKR_OK");
        }

        /* cancelled while it waits behind another session's hold */
        check_rc(zkr_mutex_acquire(m2, WAIT_MS), ZKR_OK, "the second client holds the mutex");
        memset(&at, 0, sizeof at);
        id = 0;
        check_rc(zkr_lock_acquire_async(zkr_mutex_ref(m), WAIT_MS, on_acquired, &at, &id), ZKR_OK,
                 "zkr_lock_acquire_async (it must wait)");
        sleep_ms(200);
        CHECK(atomic_load(&at.done) == 0, "the acquire waits");
        check_rc(zkr_async_cancel(c, id), ZKR_OK, "zkr_async_cancel of the pending acquire");
        CHECK(wait_int(&at.done, 1, WAIT_MS) && at.rc == ZKR_ECANCELED && at.hold == NULL && at.id == id,
              "its completion: ZKR_ECANCELED, no hold, the same acquire id");
        check_rc(zkr_async_cancel(c, id), ZKR_ENOTFOUND, "zkr_async_cancel of an acquire that has completed");
        check_rc(zkr_async_cancel(c, id + 1000000), ZKR_ENOTFOUND, "zkr_async_cancel of an unknown id");
        check_rc(zkr_async_cancel(c, 0), ZKR_EINVAL, "zkr_async_cancel of id 0");
        sleep_ms(100);
        CHECK(atomic_load(&at.calls) == 1, "the completion ran exactly once");
        check_rc(zkr_mutex_release(m2), ZKR_OK, "the second client releases");
    } else {
        CHECK(0, "zkr_mutex_new");
    }
    zkr_mutex_free(m);
    zkr_mutex_free(m2);

    /* a lease, completions on the program's loop (zkr_client_fd + zkr_client_dispatch) */
    zkr_semaphore_t *s = NULL;
    path_of(p2, sizeof p2, "async-semaphore");
    if (zkr_semaphore_new(&s, c2, p2, 1) == ZKR_OK) {
        int fd = zkr_client_fd(c2);
        CHECK(fd >= 0 && zkr_client_fd(c2) == fd, "zkr_client_fd: one fd for the client's life");
        CHECK(zkr_client_dispatch(c2) >= 0, "zkr_client_dispatch with nothing pending");
        memset(&at, 0, sizeof at);
        id = 0;
        check_rc(zkr_semaphore_acquire_async(s, WAIT_MS, on_lease_acquired, &at, &id), ZKR_OK,
                 "zkr_semaphore_acquire_async (LOOP dispatch)");
        sleep_ms(100);
        CHECK(atomic_load(&at.done) == 0, "in LOOP mode the completion waits for zkr_client_dispatch");
        CHECK(dispatch_until(c2, &at.done, WAIT_MS), "its completion runs in zkr_client_dispatch");
        CHECK(id != 0 && at.id == id, "the lease completion (zkr_lease_acquire_fn) is told the acquire id (%llu)",
              (unsigned long long)id);
        CHECK(at.rc == ZKR_OK && at.lease && zkr_lease_hold_state(at.lease) == ZKR_HOLD_SAFE, "granted: a SAFE lease");
        if (at.lease) {
            memset(&rt, 0, sizeof rt);
            check_rc(zkr_lease_release_async(at.lease, on_released, &rt), ZKR_OK, "zkr_lease_release_async");
            CHECK(dispatch_until(c2, &rt.done, WAIT_MS) && rt.rc == ZKR_OK && atomic_load(&rt.calls) == 1,
                  "its completion runs once, in zkr_client_dispatch, with ZKR_OK");
        }
        zkr_semaphore_free(s);
    } else {
        CHECK(0, "zkr_semaphore_new");
    }

    /* one term of leadership */
    memset(&at, 0, sizeof at);
    id = 0;
    path_of(p3, sizeof p3, "async-leader");
    check_rc(zkr_leader_acquire_async(c, p3, "api-term", WAIT_MS, on_acquired, &at, &id), ZKR_OK,
             "zkr_leader_acquire_async");
    CHECK(wait_int(&at.done, 1, WAIT_MS), "its completion runs");
    CHECK(id != 0 && at.id == id, "the completion is told the acquire id the call stored (%llu)",
          (unsigned long long)id);
    CHECK(at.rc == ZKR_OK && at.hold && strcmp(zkr_hold_kind(at.hold), "leader") == 0,
          "granted: a hold of kind \"leader\"");
    if (at.hold) {
        int ra = zkr_hold_node_path(at.hold, &a), rb = zkr_hold_node_path(at.hold, &b);
        owned_paths("zkr_hold_node_path (leader)", p3, ra, a, rb, b);
        a = b = NULL;
        check_rc(zkr_hold_proclaim(at.hold, "api-proclaimed"), ZKR_OK, "zkr_hold_proclaim");
        check_rc(zkr_hold_release(at.hold), ZKR_OK, "zkr_hold_release of the term");
    }
    check_rc(zkr_client_set_dispatch(c, ZKR_DISPATCH_LOOP), ZKR_OK, "zkr_client_set_dispatch LOOP");
}

/* ---- listeners: registration codes ---------------------------------------------------------- */

static void section_listeners(zkr_client_t *c)
{
    state_told_t st, st2;
    memset(&st, 0, sizeof st);
    memset(&st2, 0, sizeof st2);
    st.expect = st2.expect = c;
    atomic_store(&st.close_tried, 1); /* not this one */
    atomic_store(&st2.close_tried, 1);
    printf("# listeners: registration, one code per meaning\n");
    check_rc(zkr_client_remove_listener(c, on_state, &st), ZKR_ENOTFOUND,
             "zkr_client_remove_listener of a listener never added");
    check_rc(zkr_client_add_listener(c, on_state, &st), ZKR_OK, "zkr_client_add_listener");
    check_rc(zkr_client_add_listener(c, on_state, &st), ZKR_EALREADY, "zkr_client_add_listener of the same pair");
    check_rc(zkr_client_add_listener(c, on_state, &st2), ZKR_OK, "zkr_client_add_listener, same fn, other ctx");
    check_rc(zkr_client_add_listener(c, NULL, &st), ZKR_EINVAL, "zkr_client_add_listener of a NULL fn");
    sleep_ms(200);
    CHECK(atomic_load(&st.calls) == 0, "a listener added to a connected client is told nothing again");
    check_rc(zkr_client_remove_listener(c, on_state, &st), ZKR_OK, "zkr_client_remove_listener");
    check_rc(zkr_client_remove_listener(c, on_state, &st), ZKR_ENOTFOUND, "zkr_client_remove_listener again");
    check_rc(zkr_client_remove_listener(c, on_state, &st2), ZKR_OK, "zkr_client_remove_listener (other ctx)");
}

/* ---- which thread may release what --------------------------------------------------------- */

typedef struct other_thread {
    zkr_mutex_t *m;
    zkr_rwlock_t *l;
    zkr_semaphore_mutex_t *sm;
    zkr_lease_t *lease;
    zkr_hold_t *hold;
    int rc1, rc2, held;
    char *path;
    int path_rc;
} other_thread_t;

static void other_mutex(void *arg)
{
    other_thread_t *o = arg;
    o->held = zkr_mutex_is_held(o->m);
    o->path = g_garbage;
    o->path_rc = zkr_mutex_node_path(o->m, &o->path);
    o->rc1 = zkr_mutex_release(o->m);
}

static void other_rwlock(void *arg)
{
    other_thread_t *o = arg;
    o->held = zkr_rwlock_write_is_held(o->l) + zkr_rwlock_read_is_held(o->l);
    o->rc1 = zkr_rwlock_write_release(o->l);
    o->rc2 = zkr_rwlock_read_release(o->l);
}

static void other_smutex(void *arg)
{
    other_thread_t *o = arg;
    o->held = zkr_semaphore_mutex_is_held(o->sm);
    o->rc1 = zkr_semaphore_mutex_release(o->sm);
}

static void other_lease(void *arg)
{
    other_thread_t *o = arg;
    o->rc1 = zkr_lease_release(o->lease);
}

static void other_hold(void *arg)
{
    other_thread_t *o = arg;
    o->rc1 = zkr_hold_release(o->hold);
}

typedef struct thr {
    void (*fn)(void *);
    void *arg;
} thr_t;

static void *thr_main(void *arg)
{
    thr_t *t = arg;
    t->fn(t->arg);
    return NULL;
}

static void in_thread_run(void (*fn)(void *), void *arg)
{
    pthread_t th;
    thr_t t = {fn, arg};
    if (pthread_create(&th, NULL, thr_main, &t) != 0) {
        CHECK(0, "pthread_create");
        return;
    }
    pthread_join(th, NULL);
}

static void section_threads(zkr_client_t *c)
{
    char p1[256], p2[256], p3[256], p4[256], p5[256];
    other_thread_t o;
    printf("# threads: who may release what (the table of <zkr/common.h>)\n");

    zkr_mutex_t *m = NULL;
    if (zkr_mutex_new(&m, c, path_of(p1, sizeof p1, "threads-mutex")) == ZKR_OK) {
        check_rc(zkr_mutex_acquire(m, WAIT_MS), ZKR_OK, "mutex: acquired by the main thread");
        memset(&o, 0, sizeof o);
        o.m = m;
        in_thread_run(other_mutex, &o);
        check_rc(o.rc1, ZKR_ENOTOWNER, "mutex: released from another thread");
        CHECK(o.held == 0, "mutex: zkr_mutex_is_held answers for the calling thread (0 in another)");
        CHECK(o.path_rc == ZKR_ENOTOWNER && o.path == NULL,
              "mutex: zkr_mutex_node_path in another thread: ZKR_ENOTOWNER, *path NULL");
        CHECK(zkr_mutex_is_held(m) == 1 && zkr_mutex_is_held_by_process(m) == 1,
              "mutex: still held by the main thread");
        check_rc(zkr_mutex_release(m), ZKR_OK, "mutex: released by the main thread");
        check_rc(zkr_mutex_release(m), ZKR_ENOTOWNER, "mutex: released once more");
        zkr_mutex_free(m);
    }

    zkr_rwlock_t *l = NULL;
    if (zkr_rwlock_new(&l, c, path_of(p2, sizeof p2, "threads-rwlock")) == ZKR_OK) {
        check_rc(zkr_rwlock_write_acquire(l, WAIT_MS), ZKR_OK, "rwlock: write acquired by the main thread");
        check_rc(zkr_rwlock_read_acquire(l, WAIT_MS), ZKR_OK, "rwlock: read acquired too (downgrade)");
        memset(&o, 0, sizeof o);
        o.l = l;
        in_thread_run(other_rwlock, &o);
        check_rc(o.rc1, ZKR_ENOTOWNER, "rwlock: write half released from another thread");
        check_rc(o.rc2, ZKR_ENOTOWNER, "rwlock: read half released from another thread");
        CHECK(o.held == 0, "rwlock: is_held answers for the calling thread (0 in another)");
        check_rc(zkr_rwlock_read_release(l), ZKR_OK, "rwlock: read released by the main thread");
        check_rc(zkr_rwlock_write_release(l), ZKR_OK, "rwlock: write released by the main thread");
        zkr_rwlock_free(l);
    }

    zkr_semaphore_mutex_t *sm = NULL;
    if (zkr_semaphore_mutex_new(&sm, c, path_of(p3, sizeof p3, "threads-smutex")) == ZKR_OK) {
        check_rc(zkr_semaphore_mutex_acquire(sm, WAIT_MS), ZKR_OK, "semaphore mutex: acquired by the main thread");
        memset(&o, 0, sizeof o);
        o.sm = sm;
        in_thread_run(other_smutex, &o);
        CHECK(o.held == 1, "semaphore mutex: zkr_semaphore_mutex_is_held answers for the object (1 in another thread)");
        check_rc(o.rc1, ZKR_OK, "semaphore mutex: released from another thread");
        CHECK(zkr_semaphore_mutex_is_held(sm) == 0, "semaphore mutex: no longer held");
        check_rc(zkr_semaphore_mutex_release(sm), ZKR_ENOTOWNER, "semaphore mutex: released once more");
        zkr_semaphore_mutex_free(sm);
    }

    zkr_semaphore_t *s = NULL;
    if (zkr_semaphore_new(&s, c, path_of(p4, sizeof p4, "threads-semaphore"), 2) == ZKR_OK) {
        memset(&o, 0, sizeof o);
        check_rc(zkr_semaphore_acquire(s, WAIT_MS, &o.lease), ZKR_OK, "lease: acquired by the main thread");
        in_thread_run(other_lease, &o);
        check_rc(o.rc1, ZKR_OK, "lease: released from another thread");
        zkr_semaphore_free(s);
    }

    zkr_mutex_t *am = NULL;
    if (zkr_mutex_new(&am, c, path_of(p5, sizeof p5, "threads-async")) == ZKR_OK) {
        acq_told_t at;
        memset(&at, 0, sizeof at);
        memset(&o, 0, sizeof o);
        zkr_client_set_dispatch(c, ZKR_DISPATCH_THREAD);
        check_rc(zkr_lock_acquire_async(zkr_mutex_ref(am), WAIT_MS, on_acquired, &at, NULL), ZKR_OK,
                 "asynchronous hold: zkr_lock_acquire_async (acquire_id NULL)");
        CHECK(wait_int(&at.done, 1, WAIT_MS) && at.rc == ZKR_OK && at.hold, "asynchronous hold: granted");
        zkr_client_set_dispatch(c, ZKR_DISPATCH_LOOP);
        if (at.hold) {
            o.hold = at.hold;
            in_thread_run(other_hold, &o);
            check_rc(o.rc1, ZKR_OK, "asynchronous hold: zkr_hold_release from another thread");
        }
        zkr_mutex_free(am);
    }
}

/* ---- *_free releases what the object holds; handles outlive their object ------------------- */

static void section_frees(zkr_client_t *c, zkr_client_t *c2)
{
    char p1[256], p2[256], p3[256], p4[256];
    printf("# *_free releases what the object itself holds; handles are released on their own\n");

    zkr_mutex_t *m = NULL, *m2 = NULL;
    path_of(p1, sizeof p1, "free-mutex");
    if (zkr_mutex_new(&m, c, p1) == ZKR_OK && zkr_mutex_new(&m2, c2, p1) == ZKR_OK) {
        check_rc(zkr_mutex_acquire(m, WAIT_MS), ZKR_OK, "mutex: acquired");
        check_rc(zkr_mutex_acquire(m, WAIT_MS), ZKR_OK, "mutex: acquired again (reentrant)");
        zkr_mutex_free(m);
        m = NULL;
        check_rc(zkr_mutex_acquire(m2, 3000), ZKR_OK, "mutex: after zkr_mutex_free another session gets it");
        zkr_mutex_release(m2);
    } else {
        CHECK(0, "zkr_mutex_new");
    }
    zkr_mutex_free(m);
    zkr_mutex_free(m2);

    zkr_mutex_t *pa = NULL;
    zkr_semaphore_mutex_t *pb = NULL;
    path_of(p2, sizeof p2, "free-multi-a");
    path_of(p3, sizeof p3, "free-multi-b");
    if (zkr_mutex_new(&pa, c, p2) == ZKR_OK && zkr_semaphore_mutex_new(&pb, c, p3) == ZKR_OK) {
        zkr_lock_ref_t parts[2] = {zkr_mutex_ref(pa), zkr_semaphore_mutex_ref(pb)};
        zkr_lock_ref_t twice[2] = {zkr_mutex_ref(pa), zkr_mutex_ref(pa)};
        zkr_multilock_t *ml = NULL, *bad = NULL;
        check_rc(zkr_multilock_new(&bad, twice, 2), ZKR_EINVAL, "zkr_multilock_new with the same lock twice");
        zkr_multilock_free(bad);
        check_rc(zkr_multilock_new(&ml, parts, 2), ZKR_OK, "zkr_multilock_new");
        if (ml) {
            check_rc(zkr_multilock_acquire(ml, WAIT_MS), ZKR_OK, "zkr_multilock_acquire");
            CHECK(zkr_multilock_is_held(ml) == 1 && zkr_mutex_is_held(pa) && zkr_semaphore_mutex_is_held(pb),
                  "zkr_multilock_is_held 1, each part held");
            check_rc(zkr_multilock_release(ml), ZKR_OK, "zkr_multilock_release");
            check_rc(zkr_multilock_acquire(ml, WAIT_MS), ZKR_OK, "zkr_multilock_acquire again");
            zkr_multilock_free(ml);
            CHECK(zkr_mutex_is_held(pa) == 0 && zkr_semaphore_mutex_is_held(pb) == 0,
                  "zkr_multilock_free released the parts the calling thread acquired through it");
        }
    } else {
        CHECK(0, "zkr_mutex_new, zkr_semaphore_mutex_new");
    }
    zkr_mutex_free(pa);
    zkr_semaphore_mutex_free(pb);

    /* a lease and an asynchronous hold outlive the object that made them */
    zkr_semaphore_t *s = NULL;
    if (zkr_semaphore_new(&s, c, path_of(p4, sizeof p4, "free-semaphore"), 1) == ZKR_OK) {
        zkr_lease_t *lease = NULL;
        check_rc(zkr_semaphore_acquire(s, WAIT_MS, &lease), ZKR_OK, "lease: acquired");
        zkr_semaphore_free(s);
        CHECK(zkr_lease_hold_state(lease) == ZKR_HOLD_SAFE, "lease: still SAFE after zkr_semaphore_free");
        check_rc(zkr_lease_release(lease), ZKR_OK, "lease: released after zkr_semaphore_free");
    }
}

/* ---- one verb; the 0.2.0 names still link ------------------------------------------------------ */

static void section_verbs(zkr_client_t *c)
{
    char p1[256];
    zkr_semaphore_t *s = NULL;
    zkr_lease_t *leases[3] = {NULL, NULL, NULL};
    printf("# one verb: release; the deprecated 0.2.0 names still link\n");
    if (zkr_semaphore_new(&s, c, path_of(p1, sizeof p1, "verbs"), 3) != ZKR_OK) {
        CHECK(0, "zkr_semaphore_new");
        return;
    }
    check_rc(zkr_semaphore_acquire_n(s, 2, WAIT_MS, leases), ZKR_OK, "zkr_semaphore_acquire_n(2)");
    check_rc(zkr_lease_release_all(leases, 3), ZKR_OK, "zkr_lease_release_all (a NULL entry skipped)");
    CHECK(!leases[0] && !leases[1] && !leases[2], "zkr_lease_release_all sets each entry to NULL");
    check_rc(zkr_semaphore_acquire_n(s, 0, 0, leases), ZKR_EINVAL, "zkr_semaphore_acquire_n(0)");
    check_rc(zkr_semaphore_acquire_n(s, (size_t)ZKR_LEASES_MAX + 1, 0, leases), ZKR_EINVAL,
             "zkr_semaphore_acquire_n(ZKR_LEASES_MAX + 1)");
    check_rc(zkr_lease_release_all(leases, (size_t)ZKR_LEASES_MAX + 1), ZKR_EINVAL,
             "zkr_lease_release_all(leases, ZKR_LEASES_MAX + 1)");
    check_rc(zkr_semaphore_acquire_n(s, 4, 0, leases), ZKR_ENEVER, "zkr_semaphore_acquire_n above max_leases");
    CHECK(!leases[0] && !leases[1] && !leases[2], "... and hands nothing out");

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    check_rc(zkr_lease_return(NULL), ZKR_OK, "zkr_lease_return(NULL) (0.2.0 name: still ZKR_OK)");
    zkr_lease_t *lease = NULL;
    char *node = NULL;
    check_rc(zkr_semaphore_acquire(s, WAIT_MS, &lease), ZKR_OK, "zkr_semaphore_acquire");
    if (lease) {
        const char *lent = zkr_lease_path(lease);
        zkr_lease_node_path(lease, &node);
        CHECK(lent && node && strcmp(lent, node) == 0, "zkr_lease_path (0.2.0 name): the path the lease lends");
        CHECK(zkr_lease_path(NULL) == NULL, "zkr_lease_path(NULL) == NULL");
        check_rc(zkr_lease_return(lease), ZKR_OK, "zkr_lease_return (0.2.0 name)");
    }
    zkr_free(node);
    check_rc(zkr_semaphore_acquire_n(s, 2, WAIT_MS, leases), ZKR_OK, "zkr_semaphore_acquire_n(2)");
    check_rc(zkr_lease_return_all(leases, 2), ZKR_OK, "zkr_lease_return_all (0.2.0 name)");
    lease = NULL;
    check_rc(zkr_semaphore_acquire(s, WAIT_MS, &lease), ZKR_OK, "zkr_semaphore_acquire");
    if (lease) {
        rel_told_t rt;
        memset(&rt, 0, sizeof rt);
        check_rc(zkr_lease_return_async(lease, on_released, &rt), ZKR_OK, "zkr_lease_return_async (0.2.0 name)");
        CHECK(dispatch_until(c, &rt.done, WAIT_MS) && rt.rc == ZKR_OK, "its completion: ZKR_OK");
    }
#pragma GCC diagnostic pop
    zkr_semaphore_free(s);
}

/* ---- one meaning per code: ZKR_ENEVER, ZKR_EDEADLK, ... ---------------------------------------- */

static void section_codes(zkr_client_t *c)
{
    char p1[256];
    zkr_rwlock_t *l = NULL;
    printf("# one meaning per code\n");
    if (zkr_rwlock_new(&l, c, path_of(p1, sizeof p1, "codes-rwlock")) == ZKR_OK) {
        zkr_lock_ref_t upgrade[2] = {zkr_rwlock_read_ref(l), zkr_rwlock_write_ref(l)};
        zkr_lock_ref_t downgrade[2] = {zkr_rwlock_write_ref(l), zkr_rwlock_read_ref(l)};
        zkr_multilock_t *ml = NULL;
        check_rc(zkr_multilock_new(&ml, upgrade, 2), ZKR_ENEVER, "zkr_multilock_new: read half before write half");
        zkr_multilock_free(ml);
        ml = NULL;
        check_rc(zkr_multilock_new(&ml, downgrade, 2), ZKR_OK, "zkr_multilock_new: write half before read half");
        zkr_multilock_free(ml);
        check_rc(zkr_rwlock_read_acquire(l, WAIT_MS), ZKR_OK, "zkr_rwlock_read_acquire");
        check_rc(zkr_rwlock_write_acquire(l, WAIT_MS), ZKR_ENEVER, "zkr_rwlock_write_acquire holding the read half");
        check_rc(zkr_rwlock_read_release(l), ZKR_OK, "zkr_rwlock_read_release");
        check_rc(zkr_rwlock_read_release(l), ZKR_ENOTOWNER, "zkr_rwlock_read_release of nothing held");
        zkr_rwlock_free(l);
    }
}

/* ---- connection states through a relay: the state listener gets its client ---------------------- */

#define RELAY_MAX 8

typedef struct relay {
    int lfd, port;
    struct sockaddr_in up;
    atomic_int gate, drop, stop;
    int fds[2 * RELAY_MAX]; /* pairs: [2i] the client's side, [2i + 1] the server's; -1 free */
    pthread_t th;
} relay_t;

static void relay_close_pair(relay_t *r, int i)
{
    int k = i & ~1;
    if (r->fds[k] >= 0)
        close(r->fds[k]);
    if (r->fds[k + 1] >= 0)
        close(r->fds[k + 1]);
    r->fds[k] = r->fds[k + 1] = -1;
}

static int send_all(int fd, const char *buf, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, buf, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        buf += w;
        n -= (size_t)w;
    }
    return 0;
}

static void *relay_main(void *arg)
{
    static char buf[65536];
    relay_t *r = arg;
    while (!atomic_load(&r->stop)) {
        struct pollfd pf[1 + 2 * RELAY_MAX];
        int idx[1 + 2 * RELAY_MAX], n = 0;
        if (atomic_exchange(&r->drop, 0))
            for (int i = 0; i < 2 * RELAY_MAX; i += 2)
                relay_close_pair(r, i);
        if (atomic_load(&r->gate)) {
            pf[n] = (struct pollfd){r->lfd, POLLIN, 0};
            idx[n++] = -1;
        }
        for (int i = 0; i < 2 * RELAY_MAX; i++)
            if (r->fds[i] >= 0) {
                pf[n] = (struct pollfd){r->fds[i], POLLIN, 0};
                idx[n++] = i;
            }
        if (poll(pf, (nfds_t)n, 20) <= 0)
            continue;
        for (int k = 0; k < n; k++) {
            if (!pf[k].revents)
                continue;
            if (idx[k] < 0) {
                int a = accept(r->lfd, NULL, NULL);
                if (a < 0)
                    continue;
                int u = socket(AF_INET, SOCK_STREAM, 0);
                int slot = -1;
                for (int i = 0; i < 2 * RELAY_MAX && slot < 0; i += 2)
                    if (r->fds[i] < 0)
                        slot = i;
                if (u < 0 || slot < 0 || connect(u, (struct sockaddr *)&r->up, sizeof r->up) != 0) {
                    close(a);
                    if (u >= 0)
                        close(u);
                    continue;
                }
                r->fds[slot] = a;
                r->fds[slot + 1] = u;
            } else {
                int i = idx[k];
                if (r->fds[i] < 0 || r->fds[i] != pf[k].fd)
                    continue;
                ssize_t got = recv(r->fds[i], buf, sizeof buf, 0);
                if (got <= 0 || send_all(r->fds[i ^ 1], buf, (size_t)got) != 0)
                    relay_close_pair(r, i);
            }
        }
    }
    for (int i = 0; i < 2 * RELAY_MAX; i += 2)
        relay_close_pair(r, i);
    return NULL;
}

/* A relay on a free loopback port to the first host of `hosts`. */
static int relay_start(relay_t *r, const char *hosts)
{
    char host[128];
    const char *colon;
    size_t len = strcspn(hosts, ",");
    memset(r, 0, sizeof *r);
    for (int i = 0; i < 2 * RELAY_MAX; i++)
        r->fds[i] = -1;
    r->lfd = -1;
    if (len >= sizeof host)
        return -1;
    memcpy(host, hosts, len);
    host[len] = '\0';
    colon = strrchr(host, ':');
    if (!colon)
        return -1;
    host[colon - host] = '\0';
    r->up.sin_family = AF_INET;
    r->up.sin_port = htons((uint16_t)atoi(colon + 1));
    if (inet_pton(AF_INET, host, &r->up.sin_addr) != 1)
        return -1; /* only an IPv4 literal (run.sh gives 127.0.0.1:PORT) */
    struct sockaddr_in me;
    socklen_t me_len = sizeof me;
    memset(&me, 0, sizeof me);
    me.sin_family = AF_INET;
    me.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    r->lfd = socket(AF_INET, SOCK_STREAM, 0);
    if (r->lfd < 0 || bind(r->lfd, (struct sockaddr *)&me, sizeof me) != 0 || listen(r->lfd, 16) != 0 ||
        getsockname(r->lfd, (struct sockaddr *)&me, &me_len) != 0) {
        if (r->lfd >= 0)
            close(r->lfd);
        return -1;
    }
    r->port = ntohs(me.sin_port);
    if (pthread_create(&r->th, NULL, relay_main, r) != 0) {
        close(r->lfd);
        return -1;
    }
    return 0;
}

static void relay_stop(relay_t *r)
{
    atomic_store(&r->stop, 1);
    pthread_join(r->th, NULL);
    close(r->lfd);
}

static void section_states(const char *hosts, zkr_client_t *other)
{
    relay_t r;
    char relay_hosts[64];
    state_told_t st;
    hold_told_t ht;
    zkr_client_t *c = NULL;
    printf("# every callback gets its object: state listeners, hold listeners (connection cut by a relay)\n");
    if (relay_start(&r, hosts) != 0) {
        CHECK(0, "a relay to %s", hosts);
        return;
    }
    snprintf(relay_hosts, sizeof relay_hosts, "127.0.0.1:%d", r.port);
    memset(&st, 0, sizeof st);
    memset(&ht, 0, sizeof ht);

    /* the gate is shut: the client cannot connect before its listener is added */
    int rc = open_client(&c, relay_hosts, -1);
    check_rc(rc, ZKR_OK, "zkr_client_open, connecting in the background (connect_timeout_ms < 0)");
    if (rc != ZKR_OK) {
        relay_stop(&r);
        return;
    }
    st.expect = c;
    CHECK(zkr_client_state(c) == ZKR_STATE_LATENT && zkr_client_is_connected(c) == 0,
          "not connected yet: zkr_client_state LATENT");
    check_rc(zkr_client_add_listener(c, on_state, &st), ZKR_OK, "zkr_client_add_listener");
    atomic_store(&r.gate, 1);
    CHECK(wait_int(&st.connected, 1, WAIT_MS), "the state listener is told CONNECTED");
    CHECK(atomic_load(&st.wrong) == 0, "the state listener (zkr_state_fn) is told its client");
    CHECK(wait_int(&st.close_tried, 1, WAIT_MS) && st.close_rc == ZKR_EDEADLK,
          "zkr_client_close from its own client's listener: ZKR_EDEADLK (got %s)", zkr_err_name(st.close_rc));
    check_rc(zkr_client_wait_connected(c, WAIT_MS), ZKR_OK, "the client is still open and connected");

    /* a hold through the relay: IN_DOUBT then SAFE, told its lock */
    char p1[256];
    zkr_mutex_t *m = NULL;
    if (zkr_mutex_new(&m, c, path_of(p1, sizeof p1, "states-mutex")) == ZKR_OK) {
        ht.expect = zkr_mutex_ref(m);
        zkr_mutex_set_hold_listener(m, on_hold, &ht);
        check_rc(zkr_mutex_acquire(m, WAIT_MS), ZKR_OK, "mutex acquired through the relay");
    }
    atomic_store(&r.gate, 0);
    atomic_store(&r.drop, 1);
    CHECK(wait_int(&st.suspended, 1, WAIT_MS), "connection cut: the state listener is told SUSPENDED");
    sleep_ms(300);
    atomic_store(&r.gate, 1);
    CHECK(wait_int(&st.reconnected, 1, WAIT_MS), "connection back: the state listener is told RECONNECTED");
    CHECK(atomic_load(&st.wrong) == 0, "every call of the state listener is told its client");
    if (m) {
        CHECK(wait_int(&ht.in_doubt, 1, WAIT_MS) && wait_int(&ht.safe, 1, WAIT_MS),
              "the mutex's hold listener is told IN_DOUBT, then SAFE");
        CHECK(atomic_load(&ht.wrong) == 0 && atomic_load(&ht.lost) == 0,
              "... each time with its mutex (zkr_lock_ref_equal), never LOST");
        check_rc(zkr_mutex_release(m), ZKR_OK, "mutex released after the doubt");
        zkr_mutex_free(m);
    }
    check_rc(zkr_client_remove_listener(c, on_state, &st), ZKR_OK, "zkr_client_remove_listener");

    /* zkr_client_close: a pending acquire completes (ECLOSED, its id) before
     * it returns; holds and leases made on the client are released after it */
    char p2[256], p3[256];
    zkr_mutex_t *blocker = NULL, *waiter = NULL, *held = NULL, *held2 = NULL;
    acq_told_t hat;
    memset(&hat, 0, sizeof hat);
    zkr_semaphore_t *s = NULL;
    zkr_lease_t *lease = NULL;
    acq_told_t at;
    uint64_t id = 0;
    memset(&at, 0, sizeof at);
    path_of(p2, sizeof p2, "states-close");
    path_of(p3, sizeof p3, "states-close-sem");
    int ok = zkr_mutex_new(&blocker, other, p2) == ZKR_OK && zkr_mutex_new(&waiter, c, p2) == ZKR_OK &&
             zkr_mutex_new(&held, c, p1) == ZKR_OK && zkr_semaphore_new(&s, c, p3, 1) == ZKR_OK &&
             zkr_mutex_new(&held2, c, p3) == ZKR_OK;
    CHECK(ok, "lock objects for the close");
    if (ok) {
        check_rc(zkr_mutex_acquire(blocker, WAIT_MS), ZKR_OK, "another client holds the mutex");
        check_rc(zkr_lock_acquire_async(zkr_mutex_ref(waiter), WAIT_MS, on_acquired, &at, &id), ZKR_OK,
                 "an acquire waits behind it");
        check_rc(zkr_mutex_acquire(held, WAIT_MS), ZKR_OK, "a mutex held at close");
        check_rc(zkr_semaphore_acquire(s, WAIT_MS, &lease), ZKR_OK, "a lease held at close");
        zkr_client_set_dispatch(c, ZKR_DISPATCH_THREAD);
        memset(&hat, 0, sizeof hat);
        check_rc(zkr_lock_acquire_async(zkr_mutex_ref(held2), WAIT_MS, on_acquired, &hat, NULL), ZKR_OK,
                 "an asynchronous hold");
        CHECK(wait_int(&hat.done, 1, WAIT_MS) && hat.rc == ZKR_OK && hat.hold, "... held at close");
    }
    check_rc(zkr_client_close(c), ZKR_OK, "zkr_client_close");
    if (ok) {
        CHECK(atomic_load(&at.done) == 1 && at.rc == ZKR_ECLOSED && at.hold == NULL && at.id == id && id != 0,
              "the pending acquire's completion ran within zkr_client_close: ZKR_ECLOSED, its acquire id");
        check_rc(zkr_mutex_acquire(waiter, 0), ZKR_ECLOSED, "zkr_mutex_acquire after close (a mutex not held)");
        check_rc(zkr_mutex_release(held), ZKR_OK, "zkr_mutex_release after close (the node went with the session)");
        check_rc(zkr_lease_release(lease), ZKR_OK, "zkr_lease_release after close");
        if (hat.hold) {
            rel_told_t rt;
            memset(&rt, 0, sizeof rt);
            check_rc(zkr_hold_release_async(hat.hold, on_released, &rt), ZKR_ECLOSED,
                     "zkr_hold_release_async after close (released and freed at once)");
            sleep_ms(100);
            CHECK(atomic_load(&rt.calls) == 0, "... and its completion is never called");
        }
        zkr_mutex_release(blocker);
    }
    zkr_mutex_free(blocker);
    zkr_mutex_free(waiter);
    zkr_mutex_free(held);
    zkr_mutex_free(held2);
    zkr_semaphore_free(s);
    relay_stop(&r);
}

/* ---- main ------------------------------------------------------------------------------------------ */

int main(int argc, char **argv)
{
    zkr_client_t *c1 = NULL, *c2 = NULL;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc != 2 || !argv[1][0]) {
        fprintf(stderr, "usage: %s HOSTS   (a running ZooKeeper, e.g. 127.0.0.1:2181)\n", argv[0]);
        return 2;
    }
    g_verbose = getenv("ZKR_API_VERBOSE") && getenv("ZKR_API_VERBOSE")[0] == '1';
    snprintf(g_base, sizeof g_base, "/zkr-api-test-%ld-%lld", (long)getpid(), (long long)now_ms());
    printf("# zkrecipes %s, headers %s; server %s; paths under %s\n", zkr_version(), ZKR_VERSION, argv[1], g_base);

    section_errors();
    section_null();
    if (section_options(argv[1], &c1, &c2) != 0) {
        printf("Bail out! no client could be opened on %s\n", argv[1]);
        zkr_client_close(c1);
        zkr_client_close(c2);
        return 2;
    }
    section_getters(c1);
    section_listeners(c1);
    section_hold_listeners(c1, c2);
    section_leadership(c1);
    section_async(c1, c2);
    section_threads(c1);
    section_frees(c1, c2);
    section_verbs(c1);
    section_codes(c1);
    section_states(argv[1], c1);

    check_rc(zkr_client_close(c1), ZKR_OK, "zkr_client_close (first client)");
    check_rc(zkr_client_close(c2), ZKR_OK, "zkr_client_close (second client)");
    CHECK(atomic_load(&g_log.no_client) == 0, "every log line was told its client");
    printf("1..%d\n", g_run);
    printf("# %d checks, %d failed\n", g_run, g_failed);
    return g_failed ? 1 : 0;
}

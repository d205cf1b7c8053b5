/* zkr-lock: --print, and the plain ZooKeeper handle it needs.
 *
 * The order of the queue comes from the library (zkr_*_participants: full
 * paths in Curator's lock order); the session and the fencing token (czxid)
 * of each node come from a zoo_exists on a plain handle of our own, since
 * the public API tells them only for our own holds.  An election
 * (--leader) is read by the library alone: zkr_election_participants
 * gives every node's session, czxid and id. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/zkrl.h"

void zkrl_noop_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)zh, (void)type, (void)state, (void)path, (void)ctx;
}

int zkrl_zh_wait(zhandle_t *zh, int64_t timeout_ms)
{
    int64_t end = zkrt_now_ms() + timeout_ms;
    for (;;) {
        int st = zoo_state(zh);
        if (st == ZOO_CONNECTED_STATE || st == ZOO_EXPIRED_SESSION_STATE || st == ZOO_AUTH_FAILED_STATE ||
            zkrt_now_ms() >= end)
            return st;
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

zhandle_t *zkrl_raw_open(const zkrl_opts_t *o)
{
    size_t n = strlen(o->hosts) + (o->chroot ? strlen(o->chroot) : 0) + 1;
    char *hosts = malloc(n);
    if (!hosts)
        return NULL;
    snprintf(hosts, n, "%s%s", o->hosts, o->chroot ? o->chroot : "");
    zoo_set_debug_level((ZooLogLevel)0);
    zhandle_t *zh = zookeeper_init(hosts, zkrl_noop_watcher, o->session_timeout_ms, NULL, NULL, 0);
    free(hosts);
    if (!zh)
        return NULL;
    if (zkrl_zh_wait(zh, o->connect_timeout_ms) != ZOO_CONNECTED_STATE) {
        zookeeper_close(zh);
        return NULL;
    }
    if (o->auth_scheme &&
        zoo_add_auth(zh, o->auth_scheme, o->auth_data, (int)strlen(o->auth_data), NULL, NULL) != ZOK) {
        zookeeper_close(zh);
        return NULL;
    }
    return zh;
}

/* Bytes from the server (names, ids) as text: see zkrt_put_escaped. */
static void put_escaped_n(const char *s, size_t n, int space)
{
    zkrt_put_escaped(stdout, s, n, space);
}

static void put_escaped(const char *s)
{
    put_escaped_n(s, strlen(s), 0);
}

typedef struct listing {
    char **paths[2];
    size_t count[2];
} listing_t;

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* Role of the i-th node of a read/write lock directory (lock order). */
static const char *rw_role(const char *path, size_t i, int *writer_before)
{
    const char *name = base_name(path);
    int writer = strstr(name, "__WRIT__") != NULL;
    int reader = !writer && strstr(name, "__READ__") != NULL;
    const char *role = "waiting";
    if (writer && i == 0)
        role = "holder";
    else if (reader && !*writer_before)
        role = "holder";
    else if (!writer && !reader)
        role = "other";
    if (writer)
        *writer_before = 1;
    return role;
}

static int list_error(const zkrl_opts_t *o, int rc)
{
    if (rc == ZKR_ENONODE)
        return 0; /* nothing there: an empty listing */
    zkrl_err("cannot list %s: %s", o->path, zkr_strerror(rc));
    if (rc == ZKR_ECONNLOSS || rc == ZKR_ESESSIONLOST)
        return ZKRL_EX_UNAVAILABLE;
    return rc == ZKR_ENOAUTH ? ZKRL_EX_NOPERM : ZKRL_EX_SOFTWARE;
}

/* Fill l: [0] the holders or the whole queue, [1] the waiters of a
 * semaphore.  0, or an exit code. */
static int list_nodes(const zkrl_opts_t *o, zkr_client_t *c, listing_t *l)
{
    int rc = ZKR_OK;
    if (o->kind == ZKRL_READ || o->kind == ZKRL_WRITE) {
        zkr_rwlock_t *rw = NULL;
        if ((rc = zkr_rwlock_new(&rw, c, o->path)) == ZKR_OK)
            rc = zkr_rwlock_participants(rw, &l->paths[0], &l->count[0]);
        zkr_rwlock_free(rw);
    } else if (o->kind == ZKRL_SEMAPHORE || o->kind == ZKRL_SEMAPHORE_MUTEX) {
        zkr_semaphore_t *s = NULL;
        if ((rc = zkr_semaphore_new(&s, c, o->path, o->leases > 0 ? o->leases : 1)) == ZKR_OK)
            rc = zkr_semaphore_participants(s, &l->paths[0], &l->count[0]);
        zkr_semaphore_free(s);
        /* acquirers queue on the "locks" mutex */
        size_t n = strlen(o->path) + sizeof "/locks";
        char *locks = malloc(n);
        zkr_mutex_t *m = NULL;
        int rc2 = locks ? ZKR_OK : ZKR_ENOMEM;
        if (locks)
            snprintf(locks, n, "%s/locks", o->path);
        if (rc2 == ZKR_OK && (rc2 = zkr_mutex_new(&m, c, locks)) == ZKR_OK)
            rc2 = zkr_mutex_participants(m, &l->paths[1], &l->count[1]);
        zkr_mutex_free(m);
        free(locks);
        if (rc == ZKR_OK || rc == ZKR_ENONODE)
            rc = rc2;
    } else {
        zkr_mutex_t *m = NULL;
        if ((rc = zkr_mutex_new(&m, c, o->path)) == ZKR_OK)
            rc = zkr_mutex_participants(m, &l->paths[0], &l->count[0]);
        zkr_mutex_free(m);
    }
    return rc == ZKR_OK ? 0 : list_error(o, rc);
}

/* --print --leader: "leader|participant NODE SESSION TOKEN ID". */
static int print_election(const zkrl_opts_t *o, zkr_client_t *c)
{
    zkr_participant_t *ps = NULL;
    size_t n = 0;
    int rc = zkr_election_participants(c, o->path, ZKR_ELECTION_LATCH, &ps, &n);
    if (rc != ZKR_OK)
        return list_error(o, rc);
    for (size_t i = 0; i < n; i++) {
        printf("%s ", ps[i].is_leader ? "leader" : "participant");
        put_escaped(ps[i].node_path);
        printf(" 0x%llx %lld ", (unsigned long long)ps[i].session, (long long)ps[i].token);
        /* the id as stored: bytes, not checked; escaped, spaces included */
        put_escaped_n(ps[i].id, ps[i].id_len, 1);
        putchar('\n');
    }
    zkr_participants_free(ps, n);
    if (fflush(stdout) != 0) {
        zkrl_err("cannot write the listing");
        return ZKRL_EX_SOFTWARE;
    }
    return 0;
}

int zkrl_print(const zkrl_opts_t *o, zkr_client_t *c)
{
    if (o->kind == ZKRL_LEADER)
        return print_election(o, c);
    listing_t l;
    memset(&l, 0, sizeof l);
    int code = list_nodes(o, c, &l);
    zhandle_t *zh = NULL;
    if (code == 0 && l.count[0] + l.count[1] > 0 && !(zh = zkrl_raw_open(o))) {
        zkrl_err("cannot connect to %s to read the nodes", o->hosts);
        code = ZKRL_EX_UNAVAILABLE;
    }
    int semaphore = o->kind == ZKRL_SEMAPHORE || o->kind == ZKRL_SEMAPHORE_MUTEX;
    int writer_before = 0;
    for (int part = 0; part < 2 && code == 0; part++) {
        for (size_t i = 0; i < l.count[part] && code == 0; i++) {
            const char *p = l.paths[part][i];
            const char *role;
            if (semaphore) /* a lease beyond the first N is still waiting */
                role = part == 0 && i < (size_t)(o->leases > 0 ? o->leases : 1) ? "holder" : "waiting";
            else if (o->kind == ZKRL_READ || o->kind == ZKRL_WRITE)
                role = rw_role(p, i, &writer_before);
            else
                role = i == 0 ? "holder" : "waiting";
            struct Stat st;
            int zrc = zoo_exists(zh, p, 0, &st);
            if (zrc == ZNONODE)
                continue; /* gone since the listing */
            if (zrc != ZOK) {
                zkrl_err("cannot read %s: %s", p, zerror(zrc));
                code = ZKRL_EX_UNAVAILABLE;
                break;
            }
            printf("%s ", role);
            put_escaped(p);
            printf(" 0x%llx %lld\n", (unsigned long long)st.ephemeralOwner, (long long)st.czxid);
        }
    }
    if (zh)
        zookeeper_close(zh);
    for (int part = 0; part < 2; part++)
        zkr_strings_free(l.paths[part], l.count[part]);
    if (fflush(stdout) != 0 && code == 0) {
        zkrl_err("cannot write the listing");
        code = ZKRL_EX_SOFTWARE;
    }
    return code;
}

/* What the leader recipes share: the latch driver, the ids they write
 * (UTF-8 checks, the host's address for a selector without one),
 * participants read as Curator reads them, and telling a leadership
 * listener on the client thread. */
#include "config.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recipes/election.h"

static const int one_leader = 1;

const zkr__driver_t zkr__latch_driver = {
    .marker = "latch-",
    .key = zkr__sort_key,
    .key_marker = "latch-",
    .decide = zkr__decide_first_n,
    .decide_arg = &one_leader,
    .next_in_line = 1,
};

const zkr__driver_t *zkr__election_driver(zkr_election_kind_t kind)
{
    if (kind == ZKR_ELECTION_LATCH)
        return &zkr__latch_driver;
    if (kind == ZKR_ELECTION_SELECTOR)
        return &zkr__lock_driver;
    return NULL;
}

int zkr__leader_id_ok(const char *id)
{
    if (!id)
        return 0;
    size_t n = strnlen(id, (size_t)ZKR_LEADER_ID_MAX + 1);
    return n <= ZKR_LEADER_ID_MAX && zkr__utf8_valid(id, n);
}

char *zkr__host_address(void)
{
    char buf[INET_ADDRSTRLEN] = "127.0.0.1";
    struct ifaddrs *all = NULL;
    if (getifaddrs(&all) == 0) {
        for (struct ifaddrs *a = all; a; a = a->ifa_next) {
            if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET)
                continue;
            const struct sockaddr_in *in = (const struct sockaddr_in *)a->ifa_addr;
            if ((ntohl(in->sin_addr.s_addr) >> 24) == 127)
                continue;
            if (inet_ntop(AF_INET, &in->sin_addr, buf, sizeof buf))
                break;
        }
        freeifaddrs(all);
    }
    return strdup(buf);
}

/* ---- participants --------------------------------------------------------- */

void zkr_participants_free(zkr_participant_t *p, size_t n)
{
    if (!p)
        return;
    for (size_t i = 0; i < n; i++) {
        free(p[i].node_path);
        free(p[i].id);
    }
    free(p);
}

int zkr__participant_read(zhandle_t *zh, const char *path, watcher_fn w, void *wctx, zkr_participant_t *out)
{
    memset(out, 0, sizeof *out);
    int cap = 1024;
    char *buf = NULL;
    struct Stat st;
    int zrc = ZSYSTEMERROR;
    /* The data may be larger than a first guess: read again with room
     * for what the Stat says (a value proclaimed meanwhile can grow it). */
    for (int tries = 0; tries < 4; tries++) {
        char *nb = realloc(buf, (size_t)cap + 1);
        if (!nb) {
            free(buf);
            return ZSYSTEMERROR;
        }
        buf = nb;
        int len = cap;
        zrc = w ? zoo_wget(zh, path, w, wctx, buf, &len, &st) : zoo_get(zh, path, 0, buf, &len, &st);
        if (zrc != ZOK) {
            free(buf);
            return zrc;
        }
        if (st.dataLength <= cap) {
            len = len < 0 ? 0 : len;
            buf[len] = '\0';
            out->id = buf;
            out->id_len = (size_t)len;
            out->token = st.czxid;
            out->session = st.ephemeralOwner;
            out->node_path = strdup(path);
            if (!out->node_path) {
                free(buf);
                out->id = NULL;
                return ZSYSTEMERROR;
            }
            return ZOK;
        }
        cap = st.dataLength;
    }
    free(buf);
    return ZSYSTEMERROR; /* kept growing: not worth more tries */
}

typedef struct read_op {
    const char *path;
    const zkr__driver_t *drv;
    int leader_only;
    zkr_participant_t *p;
    size_t n;
} read_op_t;

static int read_on(zhandle_t *zh, int64_t session, void *arg)
{
    (void)session;
    read_op_t *op = arg;
    zkr__strvec_t kids;
    int rc = zkr__queue_list(zh, op->path, NULL, NULL, op->drv, &kids, NULL);
    if (rc == ZKR_ENONODE)
        return ZKR_OK;
    if (rc != ZKR_OK)
        return rc;
    if (kids.n > 0 && !(op->p = calloc(kids.n, sizeof *op->p)))
        rc = ZKR_ENOMEM;
    for (size_t i = 0; rc == ZKR_OK && i < kids.n; i++) {
        char *full = zkr__path_join(op->path, kids.v[i]);
        int zrc = full ? zkr__participant_read(zh, full, NULL, NULL, &op->p[op->n]) : ZSYSTEMERROR;
        free(full);
        if (zrc == ZOK) {
            op->p[op->n].is_leader = op->n == 0;
            if (++op->n == 1 && op->leader_only)
                break;
        } else if (zrc != ZNONODE) { /* gone meanwhile: skipped, as Curator does */
            rc = zrc == ZSYSTEMERROR ? ZKR_ENOMEM : zkr__zk_error(zrc);
        }
    }
    zkr__strvec_free(&kids);
    return rc;
}

static int read_election(zkr_client_t *c, const char *path, zkr_election_kind_t kind, int leader_only,
                         zkr_participant_t **out, size_t *count)
{
    read_op_t op = {path, zkr__election_driver(kind), leader_only, NULL, 0};
    if (!c || !out || !zkr__path_valid(path) || !op.drv)
        return ZKR_EINVAL;
    int rc = zkr_client_with_handle(c, read_on, &op);
    if (rc != ZKR_OK) {
        zkr_participants_free(op.p, op.n);
        return rc;
    }
    if (op.n == 0) {
        free(op.p);
        op.p = NULL;
    }
    *out = op.p;
    *count = op.n;
    return ZKR_OK;
}

int zkr_election_participants(zkr_client_t *c, const char *path, zkr_election_kind_t kind,
                              zkr_participant_t **participants, size_t *count)
{
    if (participants)
        *participants = NULL;
    if (count)
        *count = 0;
    if (!count)
        return ZKR_EINVAL;
    return read_election(c, path, kind, 0, participants, count);
}

int zkr_election_leader(zkr_client_t *c, const char *path, zkr_election_kind_t kind, zkr_participant_t **leader)
{
    if (leader)
        *leader = NULL;
    size_t n = 0;
    int rc = read_election(c, path, kind, 1, leader, &n);
    return rc == ZKR_OK && n == 0 ? ZKR_ENONODE : rc;
}

/* ---- telling a leadership listener ------------------------------------------ */

static int has_listener(const zkr__leader_listener_t *w)
{
    return w->latch_fn || w->selector_fn;
}

static void leader_call(const zkr__leader_listener_t *w, int is_leader, int64_t token)
{
    if (w->latch_fn)
        w->latch_fn(w->obj, is_leader, token, w->ctx);
    else if (w->selector_fn)
        w->selector_fn(w->obj, is_leader, token, w->ctx);
}

/* Client thread: one change, in the order told. */
static void tell_run(zkr_client_t *c, void *arg, int type, const char *token)
{
    (void)c;
    zkr__tell_t *t = arg;
    pthread_mutex_lock(t->mu);
    zkr__leader_listener_t who = t->who;
    int call = !t->muted;
    t->calling = pthread_self();
    t->in_call = 1;
    t->seen = type;
    pthread_mutex_unlock(t->mu);
    if (call)
        leader_call(&who, type, token ? strtoll(token, NULL, 10) : 0);
    pthread_mutex_lock(t->mu);
    t->in_call = 0;
    t->ran++;
    pthread_cond_broadcast(t->cond);
    pthread_mutex_unlock(t->mu);
}

int zkr__tell_init(zkr__tell_t *t, zkr_client_t *c, pthread_mutex_t *mu, pthread_cond_t *cond)
{
    memset(t, 0, sizeof *t);
    t->c = c;
    t->mu = mu;
    t->cond = cond;
    t->told = 0;
    return zkr__sub_add(c, tell_run, t, &t->sub);
}

void zkr__tell_locked(zkr__tell_t *t, int is_leader, int64_t token)
{
    if (t->told == is_leader)
        return;
    t->told = is_leader;
    if (!has_listener(&t->who))
        return;
    char buf[24];
    snprintf(buf, sizeof buf, "%" PRId64, is_leader ? token : 0);
    t->told_token = is_leader ? token : 0;
    t->posted++;
    zkr__sub_post(t->c, t->sub, is_leader, buf);
}

int zkr__tell_in_call_locked(const zkr__tell_t *t)
{
    return t->in_call && pthread_equal(t->calling, pthread_self());
}

void zkr__tell_finish(zkr__tell_t *t)
{
    if (!t->sub)
        return;
    if (zkr__client_on_own_thread(t->c)) {
        /* Closed from a callback (another object's, or its own listener):
         * what is posted runs on this thread, after we return.  Drop it (no
         * call after the close), and tell the last state here if the
         * listener has another (unless muted: a SILENT close). */
        zkr__sub_remove(t->c, t->sub);
        t->sub = NULL;
        pthread_mutex_lock(t->mu);
        int tell = has_listener(&t->who) && !t->muted && t->ran < t->posted && t->seen != t->told;
        zkr__leader_listener_t who = t->who;
        int state = t->told;
        int64_t token = t->told_token;
        t->seen = t->told;
        t->ran = t->posted;
        pthread_mutex_unlock(t->mu);
        if (tell)
            leader_call(&who, state, token);
        return;
    }
    /* Everything told runs before it ends (a closing client drops what it
     * has not run: then stop waiting; muted: they run as no-ops). */
    pthread_mutex_lock(t->mu);
    while (!t->muted && t->ran < t->posted && zkr_client_state(t->c) != ZKR_STATE_CLOSED)
        zkr__cond_wait_until(t->cond, t->mu, zkr__now_ms() + ZKR__CLOSED_POLL_MS);
    pthread_mutex_unlock(t->mu);
    zkr__sub_remove(t->c, t->sub);
    t->sub = NULL;
}

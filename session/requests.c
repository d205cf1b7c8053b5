/* One ZooKeeper request awaited until a deadline (session/requests.h):
 * sent on the current handle once connected, answered by the C client's
 * completion, which frees the request itself when the sender stopped
 * waiting; and many requests sent at once, awaited the same way. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "session/requests.h"
#include "util/util.h"

typedef struct rq_op {
    zkr__awaited_t aw; /* first */
    struct Stat st;
    char *value;
    int value_len;
    char *created;
    char **names;
    size_t count;
} rq_op_t;

static void op_free(rq_op_t *o)
{
    free(o->value);
    free(o->created);
    zkr__strvec_t v = {o->names, o->count};
    zkr__strvec_free(&v);
    zkr__awaited_destroy(&o->aw);
    free(o);
}

static void settle(rq_op_t *o, int rc)
{
    if (zkr__awaited_answer(&o->aw, rc))
        op_free(o);
}

static void data_done(int rc, const char *value, int len, const struct Stat *st, const void *data)
{
    rq_op_t *o = (rq_op_t *)data;
    if (rc == ZOK) {
        if (st)
            o->st = *st;
        if (value && len >= 0) {
            o->value = malloc((size_t)len + 1);
            if (!o->value) {
                rc = ZSYSTEMERROR;
            } else {
                memcpy(o->value, value, (size_t)len);
                o->value[len] = '\0';
                o->value_len = len;
            }
        }
    }
    settle(o, rc);
}

static void stat_done(int rc, const struct Stat *st, const void *data)
{
    rq_op_t *o = (rq_op_t *)data;
    if (rc == ZOK && st)
        o->st = *st;
    settle(o, rc);
}

static void void_done(int rc, const void *data)
{
    rq_op_t *o = (rq_op_t *)data;
    settle(o, rc);
}

static void create_done(int rc, const char *value, const struct Stat *st, const void *data)
{
    rq_op_t *o = (rq_op_t *)data;
    if (rc == ZOK) {
        if (st)
            o->st = *st;
        if (value && !(o->created = strdup(value)))
            rc = ZSYSTEMERROR;
    }
    settle(o, rc);
}

static int by_bytes(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void children_done(int rc, const struct String_vector *sv, const struct Stat *st, const void *data)
{
    rq_op_t *o = (rq_op_t *)data;
    if (rc == ZOK) {
        if (st)
            o->st = *st;
        zkr__strvec_t v = {NULL, 0};
        if (sv && sv->count > 0 && zkr__strvec_copy(&v, sv->data, (size_t)sv->count) != 0)
            rc = ZSYSTEMERROR;
        else if (v.n > 0)
            qsort(v.v, v.n, sizeof *v.v, by_bytes);
        o->names = v.v;
        o->count = v.n;
    }
    settle(o, rc);
}

static void op_closing(zkr__req_t *r)
{
    /* the handle closed before an answer: the completion never runs */
    settle((rq_op_t *)r, ZCLOSING);
}

static int send_op(zhandle_t *zh, const zkr_client_t *c, const zkr__rq_t *r, rq_op_t *o)
{
    watcher_fn w = r->watch ? zkr__sub_watcher() : NULL;
    switch (r->type) {
    case ZKR__RQ_GET:
        return zoo_awget(zh, r->path, w, r->watch, data_done, o);
    case ZKR__RQ_SET:
        return zoo_aset(zh, r->path, r->data, r->data ? r->data_len : -1, r->version, stat_done, o);
    case ZKR__RQ_CREATE:
        return zoo_acreate2(zh, r->path, r->data, r->data ? r->data_len : -1, zkr__client_acl(c), r->mode,
                            create_done, o);
    case ZKR__RQ_DELETE:
        return zoo_adelete(zh, r->path, r->version, void_done, o);
    case ZKR__RQ_EXISTS:
        return zoo_awexists(zh, r->path, w, r->watch, stat_done, o);
    case ZKR__RQ_CHILDREN:
        return zoo_awget_children2(zh, r->path, w, r->watch, children_done, o);
    }
    return ZBADARGUMENTS;
}

void zkr__rq_clear(zkr__rq_t *r)
{
    if (!r)
        return;
    free(r->value);
    free(r->created);
    zkr__strvec_t v = {r->names, r->count};
    zkr__strvec_free(&v);
    r->value = r->created = NULL;
    r->names = NULL;
    r->value_len = 0;
    r->count = 0;
    memset(&r->stat, 0, sizeof r->stat);
}

/* The answer of an op awaited to its end moved into r, the op freed: the
 * code through zkr__zh_answer. */
static int take_answer(zkr__zh_t *h, zkr__rq_t *r, rq_op_t *o)
{
    int zrc = o->aw.rc;
    if (zrc == ZOK) {
        r->stat = o->st;
        r->value = o->value;
        r->value_len = o->value_len;
        r->created = o->created;
        r->names = o->names;
        r->count = o->count;
        o->value = o->created = NULL;
        o->names = NULL;
        o->count = 0;
    }
    op_free(o);
    return zkr__zh_answer(zkr__zh(h), zrc);
}

/* The code for a client that did not become usable by the deadline
 * (zkr__client_wait_usable's): the credentials refused is not a closing
 * client. */
static int unusable(int rc)
{
    return rc == ZKR_ETIMEDOUT ? ZOPERATIONTIMEOUT : rc == ZKR_ENOAUTH ? ZAUTHFAILED : ZCLOSING;
}

#define CLOSE_POLL_MS 50 /* how soon a wait for an answer sees zkr_client_close */

/* Wait for o's answer until the deadline, or until zkr_client_close begins
 * (it waits for this thread: never for the answer of a stalled link).
 * 1: answered (o->aw.rc); 0: given up, the completion frees o (*closed 1:
 * by close). */
static int await_answer(zkr_client_t *c, rq_op_t *o, int64_t deadline, int *closed)
{
    zkr__awaited_t *a = &o->aw;
    int shut = 0;
    pthread_mutex_lock(&a->mu);
    while (!a->done && !shut && zkr__remaining_ms(deadline) > 0) {
        int64_t slice = zkr__deadline(CLOSE_POLL_MS);
        zkr__cond_wait_until(&a->cond, &a->mu, slice < deadline ? slice : deadline);
        if (a->done)
            break;
        pthread_mutex_unlock(&a->mu);
        shut = zkr_client_state(c) == ZKR_STATE_CLOSED;
        pthread_mutex_lock(&a->mu);
    }
    int done = a->done;
    a->abandoned = !done;
    pthread_mutex_unlock(&a->mu);
    *closed = !done && shut;
    return done;
}

/* One send and its answer; r->session set when sent. */
static int request_once(zkr_client_t *c, zkr__rq_t *r, int64_t deadline)
{
    int rc = zkr__client_wait_usable(c, deadline);
    if (rc != ZKR_OK)
        return unusable(rc);
    zkr__zh_t *h;
    if (zkr__client_get_handle(c, &h) != ZKR_OK)
        return ZCLOSING;
    rq_op_t *o = calloc(1, sizeof *o);
    if (!o || zkr__awaited_init(&o->aw) != 0) {
        free(o);
        zkr__client_put_handle(c, h);
        return ZSYSTEMERROR;
    }
    r->session = zkr__zh_session(c, h);
    zkr__req_start(h, &o->aw.req, op_closing);
    int zrc = send_op(zkr__zh(h), c, r, o);
    if (zrc != ZOK) {
        zkr__req_end(&o->aw.req);
        op_free(o);
        zrc = zkr__zh_answer(zkr__zh(h), zrc);
        zkr__client_put_handle(c, h);
        return zrc;
    }
    int closed;
    if (!await_answer(c, o, deadline, &closed)) {
        zkr__client_put_handle(c, h);
        return closed ? ZCLOSING : ZOPERATIONTIMEOUT; /* the completion frees it */
    }
    zrc = take_answer(h, r, o);
    zkr__client_put_handle(c, h);
    return zrc;
}

typedef struct parent_ctx {
    zkr_client_t *c;
    int64_t deadline;
} parent_ctx_t;

static int create_parent(void *ctx, const char *p, const struct ACL_vector *acl, int mode)
{
    (void)acl; /* the client's, as request_once sends */
    parent_ctx_t *pc = ctx;
    zkr__rq_t r = {.type = ZKR__RQ_CREATE, .path = p, .mode = mode};
    int zrc = request_once(pc->c, &r, pc->deadline);
    if (zrc == ZNOAUTH) {
        /* the server refuses a create under a parent that denies us CREATE
         * before it sees the node is there: an ancestor that is there is
         * passed (Curator's ZKPaths.mkdirs asks exists first) */
        zkr__rq_t e = {.type = ZKR__RQ_EXISTS, .path = p};
        int erc = request_once(pc->c, &e, pc->deadline);
        zkr__rq_clear(&e);
        if (erc == ZOK)
            zrc = ZOK;
    }
    zkr__rq_clear(&r);
    return zrc == ZNODEEXISTS ? ZOK : zrc;
}

int zkr__request(zkr_client_t *c, zkr__rq_t *r, int64_t deadline)
{
    zkr__rq_clear(r);
    r->session = 0;
    if (zkr__client_enter(c) != ZKR_OK)
        return ZCLOSING;
    int zrc = request_once(c, r, deadline);
    if (zrc == ZNONODE && r->type == ZKR__RQ_CREATE && r->parents) {
        char *dir = strdup(r->path);
        char *slash = dir ? strrchr(dir, '/') : NULL;
        if (!dir) {
            zrc = ZSYSTEMERROR;
        } else if (slash && slash != dir) {
            *slash = '\0';
            r->session = 0; /* refused: it says whether the create sent again was */
            parent_ctx_t pc = {c, deadline};
            int prc = zkr__parents_each(c, dir, create_parent, &pc);
            zrc = prc == ZOK ? request_once(c, r, deadline) : prc == ZKR_ENOMEM ? ZSYSTEMERROR : prc;
        }
        free(dir);
    }
    zkr__client_leave(c);
    return zrc;
}

int zkr__rq_error(int zrc)
{
    if (zrc == ZOPERATIONTIMEOUT)
        return ZKR_ETIMEDOUT;
    if (zrc == ZCLOSING)
        return ZKR_ECLOSED;
    return zkr__zk_error(zrc);
}

/* Every request sent on one handle, then each answer awaited until the
 * deadline; those not answered by then are left to their completions. */
static int request_all_once(zkr_client_t *c, zkr__rq_t *rs, size_t n, int64_t deadline)
{
    int rc = zkr__client_wait_usable(c, deadline);
    if (rc != ZKR_OK)
        return unusable(rc);
    zkr__zh_t *h;
    if (zkr__client_get_handle(c, &h) != ZKR_OK)
        return ZCLOSING;
    rq_op_t **ops = calloc(n, sizeof *ops);
    if (!ops) {
        zkr__client_put_handle(c, h);
        return ZSYSTEMERROR;
    }
    int64_t session = zkr__zh_session(c, h);
    for (size_t i = 0; i < n; i++) {
        rq_op_t *o = calloc(1, sizeof *o);
        if (!o || zkr__awaited_init(&o->aw) != 0) {
            free(o);
            rs[i].rc = ZSYSTEMERROR;
            continue;
        }
        rs[i].session = session;
        zkr__req_start(h, &o->aw.req, op_closing);
        int zrc = send_op(zkr__zh(h), c, &rs[i], o);
        if (zrc != ZOK) {
            zkr__req_end(&o->aw.req);
            op_free(o);
            rs[i].rc = zkr__zh_answer(zkr__zh(h), zrc);
            continue;
        }
        ops[i] = o;
    }
    int all = ZOK, closed = 0;
    for (size_t i = 0; i < n; i++) {
        if (!ops[i])
            continue;
        /* (past the deadline, or closing: each answered one taken, the
         * rest given up at once) */
        if (!await_answer(c, ops[i], closed ? zkr__deadline(0) : deadline, &closed)) {
            all = rs[i].rc = closed ? ZCLOSING : ZOPERATIONTIMEOUT; /* its completion frees it */
            continue;
        }
        rs[i].rc = take_answer(h, &rs[i], ops[i]);
    }
    free(ops);
    zkr__client_put_handle(c, h);
    return all;
}

int zkr__request_all(zkr_client_t *c, zkr__rq_t *rs, size_t n, int64_t deadline)
{
    for (size_t i = 0; i < n; i++) {
        zkr__rq_clear(&rs[i]);
        rs[i].session = 0;
        rs[i].rc = ZOPERATIONTIMEOUT;
    }
    if (n == 0)
        return ZOK;
    if (zkr__client_enter(c) != ZKR_OK)
        return ZCLOSING;
    int zrc = request_all_once(c, rs, n, deadline);
    zkr__client_leave(c);
    for (size_t i = 0; zrc == ZCLOSING && i < n; i++)
        rs[i].rc = ZCLOSING; /* (nothing was sent) */
    return zrc;
}

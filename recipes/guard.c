/* Guarded writes (include/zkr/guard.h): the program's writes and a check
 * that a hold's node still exists, as one multi on the node's session;
 * each hold kind's form, and the leader's proclaim (a guarded set of its
 * own node). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "recipes/election.h"

typedef struct gwrite {
    const char *guard;
    int64_t session;
    zkr_op_t *ops;
    size_t n;
    const struct ACL_vector *acl;
} gwrite_t;

static int op_valid(const zkr_op_t *op)
{
    if (!zkr__path_valid(op->path) || op->data_len > ZKR_DATA_MAX || (op->data_len > 0 && !op->data))
        return 0;
    if (op->type == ZKR_OP_CREATE)
        return op->flags >= 0 && op->flags <= (ZKR_CREATE_EPHEMERAL | ZKR_CREATE_SEQUENTIAL);
    return op->type == ZKR_OP_DELETE || op->type == ZKR_OP_SET || op->type == ZKR_OP_CHECK;
}

/* ZooKeeper's default jute.maxbuffer: a server drops the connection
 * that sends a larger request (and every hold on it goes IN_DOUBT). */
#define REQUEST_MAX 0xfffff

/* What the multi weighs as jute writes it, rounded up: per operation its
 * header and fixed fields, its path and data, a create's ACL. */
static size_t request_size(const char *guard, const zkr_op_t *ops, size_t n, const struct ACL_vector *acl)
{
    size_t acl_size = 4;
    for (int32_t i = 0; acl && i < acl->count; i++)
        acl_size += 12 + strlen(acl->data[i].id.scheme) + strlen(acl->data[i].id.id);
    size_t total = 64 + 32 + strlen(guard); /* the request's headers, the guard's check */
    for (size_t i = 0; i < n; i++)
        total += 32 + strlen(ops[i].path) + ops[i].data_len + (ops[i].type == ZKR_OP_CREATE ? acl_size : 0);
    return total;
}

static int create_mode(int flags)
{
    int e = flags & ZKR_CREATE_EPHEMERAL, s = flags & ZKR_CREATE_SEQUENTIAL;
    return e && s ? ZOO_EPHEMERAL_SEQUENTIAL : e ? ZOO_EPHEMERAL : s ? ZOO_PERSISTENT_SEQUENTIAL : ZOO_PERSISTENT;
}

/* The refused transaction's cause: the first result that is neither ZOK
 * nor "not run" (ZRUNTIMEINCONSISTENCY, what the server answers for the
 * operations after the one that failed). */
static int refused(gwrite_t *w, const zoo_op_result_t *res)
{
    if (res[0].err != ZOK && res[0].err != ZRUNTIMEINCONSISTENCY)
        return ZKR_EGUARD;
    int rc = ZKR_EZOOKEEPER;
    for (size_t i = w->n; i-- > 0;) {
        int err = res[i + 1].err;
        w->ops[i].rc = ZKR_OK;
        if (err != ZOK && err != ZRUNTIMEINCONSISTENCY)
            rc = w->ops[i].rc = zkr__zk_error(err);
    }
    return rc;
}

static int gwrite_on(zhandle_t *zh, int64_t session, void *arg)
{
    gwrite_t *w = arg;
    if (w->session && session != w->session)
        return ZKR_EGUARD; /* the node's session is not the client's any more */
    size_t m = w->n + 1;
    zoo_op_t *zops = calloc(m, sizeof *zops);
    zoo_op_result_t *res = calloc(m, sizeof *res);
    struct Stat *stats = calloc(m, sizeof *stats);
    char **bufs = calloc(m, sizeof *bufs);
    int rc = zops && res && stats && bufs ? ZKR_OK : ZKR_ENOMEM;
    if (rc == ZKR_OK)
        zoo_check_op_init(&zops[0], w->guard, -1);
    for (size_t i = 0; rc == ZKR_OK && i < w->n; i++) {
        const zkr_op_t *op = &w->ops[i];
        zoo_op_t *z = &zops[i + 1];
        const char *data = op->data ? op->data : "";
        if (op->type == ZKR_OP_CREATE) {
            int len = (int)strlen(op->path) + 16;
            if (!(bufs[i] = calloc(1, (size_t)len)))
                rc = ZKR_ENOMEM;
            else
                zoo_create_op_init(z, op->path, data, (int)op->data_len, w->acl, create_mode(op->flags), bufs[i],
                                   len);
        } else if (op->type == ZKR_OP_DELETE) {
            zoo_delete_op_init(z, op->path, op->version);
        } else if (op->type == ZKR_OP_SET) {
            zoo_set_op_init(z, op->path, data, (int)op->data_len, op->version, &stats[i]);
        } else {
            zoo_check_op_init(z, op->path, op->version);
        }
    }
    if (rc == ZKR_OK) {
        int zrc = zoo_multi(zh, (int)m, zops, res);
        if (zrc == ZOK) {
            for (size_t i = 0; i < w->n; i++) {
                w->ops[i].rc = ZKR_OK;
                w->ops[i].created = bufs[i];
                bufs[i] = NULL;
            }
        } else if (zkr__zk_class(zrc) == ZKR__ZC_FINAL) {
            rc = refused(w, res);
        } else {
            rc = zkr__zk_error(zrc); /* connection (outcome unknown) or session */
        }
    }
    for (size_t i = 0; bufs && i < m; i++)
        free(bufs[i]);
    free(bufs);
    free(stats);
    free(res);
    free(zops);
    return rc;
}

int zkr_guarded_write(zkr_client_t *c, const char *guard_path, int64_t guard_session, zkr_op_t *ops, size_t n)
{
    if (!c || !zkr__path_valid(guard_path) || !ops || n < 1 || n > ZKR_GUARD_OPS_MAX)
        return ZKR_EINVAL;
    for (size_t i = 0; i < n; i++) {
        ops[i].rc = ZKR_OK;
        ops[i].created = NULL;
    }
    for (size_t i = 0; i < n; i++)
        if (!op_valid(&ops[i]))
            return ZKR_EINVAL;
    gwrite_t w = {guard_path, guard_session, ops, n, zkr__client_acl(c)};
    if (request_size(guard_path, ops, n, w.acl) > REQUEST_MAX)
        return ZKR_EINVAL;
    return zkr_client_with_handle(c, gwrite_on, &w);
}

int zkr__guard_run(zkr__guard_t *g, zkr_op_t *ops, size_t n)
{
    int rc = g->state == ZKR_HOLD_LOST ? ZKR_EGUARD : zkr_guarded_write(g->c, g->path, g->session, ops, n);
    if (rc == ZKR_EGUARD && ops && n <= ZKR_GUARD_OPS_MAX) {
        for (size_t i = 0; i < n; i++) {
            ops[i].rc = ZKR_OK;
            ops[i].created = NULL; /* nothing was written */
        }
    }
    free(g->path);
    g->path = NULL;
    return rc;
}

void zkr_ops_clear(zkr_op_t *ops, size_t n)
{
    for (size_t i = 0; ops && i < n; i++) {
        free(ops[i].created);
        ops[i].created = NULL;
    }
}

/* ---- each kind's hold ------------------------------------------------------- */

/* A hold found by `found` (ZKR_OK) guards the write. */
static int guarded(int found, zkr__guard_t *g, zkr_op_t *ops, size_t n)
{
    return found == ZKR_OK ? zkr__guard_run(g, ops, n) : found;
}

int zkr_mutex_guarded_write(zkr_mutex_t *m, zkr_op_t *ops, size_t n)
{
    zkr__guard_t g;
    return m ? guarded(zkr__mutex_guard(m, &g), &g, ops, n) : ZKR_EINVAL;
}

int zkr_lease_guarded_write(zkr_lease_t *lease, zkr_op_t *ops, size_t n)
{
    zkr__guard_t g;
    return lease ? guarded(zkr__lease_guard(lease, &g), &g, ops, n) : ZKR_EINVAL;
}

int zkr_hold_guarded_write(zkr_hold_t *hold, zkr_op_t *ops, size_t n)
{
    zkr__guard_t g;
    return hold ? guarded(zkr__hold_guard(hold, 0, &g), &g, ops, n) : ZKR_EINVAL;
}

int zkr_lock_guarded_write(zkr_lock_ref_t ref, zkr_op_t *ops, size_t n)
{
    zkr__guard_t g;
    int kind = zkr__lock_ref_kind(ref), found;
    if (kind == ZKR__LK_MUTEX)
        found = zkr__mutex_guard(ref.obj, &g);
    else if (kind == ZKR__LK_SMUTEX)
        found = zkr__semaphore_mutex_guard(ref.obj, &g);
    else if (kind == ZKR__LK_READ || kind == ZKR__LK_WRITE)
        found = zkr__rwlock_guard(ref.obj, kind == ZKR__LK_WRITE, &g);
    else
        return ZKR_EINVAL;
    return guarded(found, &g, ops, n);
}

/* ---- proclaim ------------------------------------------------------------------- */

int zkr__proclaim(zkr__guard_t *g, const char *value)
{
    if (!zkr__leader_id_ok(value)) {
        free(g->path);
        g->path = NULL;
        return ZKR_EINVAL;
    }
    zkr_op_t set = ZKR_OP_SET_INIT(g->path, value, strlen(value), -1);
    int rc = zkr__guard_run(g, &set, 1);
    return rc == ZKR_EGUARD || rc == ZKR_ENONODE ? ZKR_ENOTLEADER : rc;
}

int zkr_hold_proclaim(zkr_hold_t *hold, const char *value)
{
    zkr__guard_t g;
    int rc = hold ? zkr__hold_guard(hold, ZKR__LK_LEADER, &g) : ZKR_EINVAL;
    return rc == ZKR_OK ? zkr__proclaim(&g, value) : rc;
}

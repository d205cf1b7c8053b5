/* Registering instances (include/zkr/discovery.h): each registration is a
 * zkr_pnode at <base>/<name>/<id> whose data is the instance's JSON, in
 * the mode Curator gives the service type.  The discovery keeps its
 * registrations in a list; a call that waits on one (register, update)
 * counts itself in it, and an unregister waits for those calls to leave
 * before freeing its pnode (a register notices within WAIT_SLICE_MS). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "recipes/discovery_private.h"
#include "recipes/pnode_private.h"
#include "session/core.h"
#include "util/util.h"
#include "zkr/pnode.h"

#define WAIT_SLICE_MS 100

struct zkr__disc_reg {
    zkr__disc_reg_t *next;
    char *name, *id;
    zkr_service_type_t type;
    zkr_pnode_t *node;
    int users; /* calls waiting on node (guarded by the discovery's mu) */
    int gone;  /* unregistered: they leave */
};

static void reg_free(zkr__disc_reg_t *r)
{
    zkr_pnode_free(r->node);
    free(r->name);
    free(r->id);
    free(r);
}

/* With d->mu held. */
static zkr__disc_reg_t *find_locked(zkr_discovery_t *d, const char *name, const char *id)
{
    for (zkr__disc_reg_t *r = d->regs; r; r = r->next)
        if (strcmp(r->name, name) == 0 && strcmp(r->id, id) == 0)
            return r;
    return NULL;
}

/* Out of the list, then (once no call waits on it) freed, deleting its
 * node.  With d->mu held; returns with it held. */
static void drop_locked(zkr_discovery_t *d, zkr__disc_reg_t *r)
{
    for (zkr__disc_reg_t **p = &d->regs; *p; p = &(*p)->next)
        if (*p == r) {
            *p = r->next;
            break;
        }
    r->gone = 1;
    while (r->users > 0)
        pthread_cond_wait(&d->cond, &d->mu);
    pthread_mutex_unlock(&d->mu);
    reg_free(r);
    pthread_mutex_lock(&d->mu);
}

static void leave(zkr_discovery_t *d, zkr__disc_reg_t *r)
{
    pthread_mutex_lock(&d->mu);
    r->users--;
    pthread_cond_broadcast(&d->cond);
    pthread_mutex_unlock(&d->mu);
}

/* Told on the callback thread: what a program should know of. */
static void on_pnode(zkr_pnode_t *node, const zkr_pnode_event_t *ev, void *ctx)
{
    (void)node;
    zkr_discovery_t *d = ctx;
    if (ev->type == ZKR_PNODE_WAITING)
        zkr__log(d->c, ZKR_LOG_WARN,
                 "discovery: another session's node is at %s: the registration waits for it to go", ev->node_path);
    else if (ev->type == ZKR_PNODE_FAILED)
        zkr__log(d->c, ZKR_LOG_ERROR, "discovery: the server refuses %s: %s", ev->node_path, zkr_strerror(ev->rc));
}

static zkr_pnode_mode_t mode_of(zkr_service_type_t t)
{
    switch (t) {
    case ZKR_SERVICE_DYNAMIC: return ZKR_PNODE_EPHEMERAL;
    case ZKR_SERVICE_DYNAMIC_SEQUENTIAL: return ZKR_PNODE_EPHEMERAL_SEQUENTIAL;
    default: return ZKR_PNODE_PERSISTENT; /* STATIC, PERMANENT (Curator's default branch) */
    }
}

static int reg_new(zkr_discovery_t *d, const zkr_instance_t *inst, const char *json, size_t len,
                   zkr__disc_reg_t **out)
{
    zkr__disc_reg_t *r = calloc(1, sizeof *r);
    char *path = zkr__disc_path(d->base, inst->name, inst->id);
    if (!r || !path || !(r->name = strdup(inst->name)) || !(r->id = strdup(inst->id))) {
        free(path);
        if (r) {
            free(r->name);
            free(r);
        }
        return ZKR_ENOMEM;
    }
    r->type = inst->service_type;
    zkr_pnode_options_t opt;
    zkr_pnode_options_init(&opt);
    opt.mode = mode_of(inst->service_type);
    int rc = zkr_pnode_new(&r->node, d->c, path, json, len, &opt);
    free(path);
    if (rc == ZKR_OK)
        rc = zkr_pnode_set_listener(r->node, on_pnode, d);
    if (rc == ZKR_OK)
        rc = zkr_pnode_start(r->node);
    if (rc != ZKR_OK) {
        reg_free(r);
        return rc;
    }
    *out = r;
    return ZKR_OK;
}

int zkr_discovery_register(zkr_discovery_t *d, const zkr_instance_t *inst, int64_t timeout_ms)
{
    if (!d || !inst)
        return ZKR_EINVAL;
    int64_t deadline = zkr__deadline(timeout_ms);
    char *json;
    size_t len;
    int rc = zkr_instance_to_json(inst, &json, &len);
    if (rc != ZKR_OK)
        return rc;
    pthread_mutex_lock(&d->mu);
    zkr__disc_reg_t *r = NULL;
    if (find_locked(d, inst->name, inst->id))
        rc = ZKR_EALREADY;
    else if ((rc = reg_new(d, inst, json, len, &r)) == ZKR_OK) {
        r->next = d->regs;
        d->regs = r;
        r->users = 1;
    }
    pthread_mutex_unlock(&d->mu);
    free(json);
    if (rc != ZKR_OK)
        return rc;
    /* in slices, so that an unregister meanwhile is not held up */
    for (;;) {
        int64_t left = zkr__remaining_ms(deadline);
        rc = zkr_pnode_wait_created(r->node, left < WAIT_SLICE_MS ? left : WAIT_SLICE_MS);
        pthread_mutex_lock(&d->mu);
        int gone = r->gone;
        pthread_mutex_unlock(&d->mu);
        if (gone) {
            rc = ZKR_ENOTFOUND;
            break;
        }
        if (rc != ZKR_ETIMEDOUT || left <= WAIT_SLICE_MS)
            break;
    }
    /* refused for good: not kept */
    int refused = rc != ZKR_OK && rc != ZKR_ETIMEDOUT && rc != ZKR_ENOTFOUND && rc != ZKR_ECLOSED;
    pthread_mutex_lock(&d->mu);
    r->users--;
    pthread_cond_broadcast(&d->cond);
    if (refused && !r->gone)
        drop_locked(d, r);
    pthread_mutex_unlock(&d->mu);
    return rc;
}

int zkr_discovery_update(zkr_discovery_t *d, const zkr_instance_t *inst, int64_t timeout_ms)
{
    if (!d || !inst || inst->size < sizeof *inst)
        return ZKR_EINVAL;
    int64_t deadline = zkr__deadline(timeout_ms);
    pthread_mutex_lock(&d->mu);
    zkr__disc_reg_t *r = inst->name && inst->id ? find_locked(d, inst->name, inst->id) : NULL;
    zkr_instance_t t = *inst;
    if (r) {
        t.service_type = r->type; /* the node's mode stays the registered one's */
        r->users++;
    }
    pthread_mutex_unlock(&d->mu);
    char *json;
    size_t len;
    int rc = zkr_instance_to_json(&t, &json, &len);
    if (rc == ZKR_OK && !r)
        rc = ZKR_ENOTFOUND;
    uint64_t gen = 0;
    if (rc == ZKR_OK)
        rc = zkr__pnode_put_data(r->node, json, len, &gen);
    free(json);
    /* in slices, as register: an unregister meanwhile is not held up */
    while (rc == ZKR_OK) {
        int64_t left = zkr__remaining_ms(deadline);
        rc = zkr__pnode_wait_written(r->node, gen, zkr__deadline(left < WAIT_SLICE_MS ? left : WAIT_SLICE_MS));
        pthread_mutex_lock(&d->mu);
        int gone = r->gone;
        pthread_mutex_unlock(&d->mu);
        if (gone)
            rc = ZKR_ENOTFOUND;
        if (rc != ZKR_ETIMEDOUT || left <= WAIT_SLICE_MS)
            break;
        rc = ZKR_OK; /* (wait on) */
    }
    if (r)
        leave(d, r);
    return rc;
}

int zkr_discovery_unregister(zkr_discovery_t *d, const char *name, const char *id)
{
    if (!d || !name || !id)
        return ZKR_EINVAL;
    pthread_mutex_lock(&d->mu);
    zkr__disc_reg_t *r = find_locked(d, name, id);
    if (r)
        drop_locked(d, r);
    pthread_mutex_unlock(&d->mu);
    return r ? ZKR_OK : ZKR_ENOTFOUND;
}

void zkr__disc_unregister_all(zkr_discovery_t *d)
{
    pthread_mutex_lock(&d->mu);
    while (d->regs)
        drop_locked(d, d->regs);
    pthread_mutex_unlock(&d->mu);
}

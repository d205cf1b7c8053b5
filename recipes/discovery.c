/* The discovery handle (include/zkr/discovery.h): its base path, and the
 * queries, each a few ZooKeeper requests awaited until one deadline
 * (session/requests.h): the services' names, the instances of one service
 * (its children, then every child's data read at once), one instance.  Its
 * registrations are discovery_register.c's. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "recipes/discovery_private.h"
#include "session/requests.h"
#include "util/util.h"

int zkr_discovery_new(zkr_discovery_t **out, zkr_client_t *c, const char *base_path)
{
    if (out)
        *out = NULL;
    if (!out || !c || !zkr__path_valid(base_path))
        return ZKR_EINVAL;
    zkr_discovery_t *d = calloc(1, sizeof *d);
    if (!d || !(d->base = strdup(base_path)) || zkr__sync_init(&d->mu, &d->cond) != 0) {
        if (d)
            free(d->base);
        free(d);
        return ZKR_ENOMEM;
    }
    int rc = zkr__client_retain(c);
    if (rc != ZKR_OK) {
        zkr__sync_destroy(&d->mu, &d->cond);
        free(d->base);
        free(d);
        return rc;
    }
    d->c = c;
    *out = d;
    return ZKR_OK;
}

void zkr_discovery_free(zkr_discovery_t *d)
{
    if (!d)
        return;
    zkr__disc_unregister_all(d);
    zkr__sync_destroy(&d->mu, &d->cond);
    zkr__client_release(d->c);
    free(d->base);
    free(d);
}

/* The children of path, sorted; ZNONODE gives none. */
static int children(zkr_client_t *c, const char *path, char ***names, size_t *count, int64_t deadline)
{
    zkr__rq_t r = {.type = ZKR__RQ_CHILDREN, .path = path};
    int zrc = zkr__request(c, &r, deadline);
    int rc = zrc == ZNONODE ? ZKR_OK : zkr__rq_error(zrc);
    if (zrc == ZOK && r.count > 0) {
        *names = r.names;
        *count = r.count;
        r.names = NULL;
        r.count = 0;
    }
    zkr__rq_clear(&r);
    return rc;
}

int zkr_discovery_names(zkr_discovery_t *d, char ***names, size_t *count, int64_t timeout_ms)
{
    if (names)
        *names = NULL;
    if (count)
        *count = 0;
    if (!d || !names || !count)
        return ZKR_EINVAL;
    return children(d->c, d->base, names, count, zkr__deadline(timeout_ms));
}

/* One instance node's data, parsed. */
static int read_instance(zkr_discovery_t *d, const char *path, zkr_instance_t **inst, int64_t deadline)
{
    zkr__rq_t r = {.type = ZKR__RQ_GET, .path = path};
    int zrc = zkr__request(d->c, &r, deadline);
    int rc = zkr__rq_error(zrc);
    if (zrc == ZOK)
        rc = zkr__disc_parse(r.value, r.value ? (size_t)r.value_len : 0, inst);
    zkr__rq_clear(&r);
    return rc;
}

int zkr_discovery_instance(zkr_discovery_t *d, const char *name, const char *id, zkr_instance_t **inst,
                           int64_t timeout_ms)
{
    if (inst)
        *inst = NULL;
    if (!d || !inst || !zkr__disc_segment_valid(name) || !zkr__disc_segment_valid(id))
        return ZKR_EINVAL;
    char *path = zkr__disc_path(d->base, name, id);
    if (!path)
        return ZKR_ENOMEM;
    int rc = read_instance(d, path, inst, zkr__deadline(timeout_ms));
    free(path);
    return rc;
}

/* Every instance node's data (the ids' nodes under dir), read at once
 * (zkr__request_all) and parsed into v (got of them): nodes gone
 * meanwhile and unreadable data left out, the latter logged. */
static int read_all(zkr_discovery_t *d, const char *dir, char **ids, size_t n, zkr_instance_t **v, size_t *got,
                    int64_t deadline)
{
    zkr__rq_t *rs = calloc(n, sizeof *rs);
    char **paths = calloc(n, sizeof *paths);
    int rc = rs && paths ? ZKR_OK : ZKR_ENOMEM;
    for (size_t i = 0; rc == ZKR_OK && i < n; i++) {
        rs[i].type = ZKR__RQ_GET;
        if (!(rs[i].path = paths[i] = zkr__path_join(dir, ids[i])))
            rc = ZKR_ENOMEM;
    }
    int zrc = rc == ZKR_OK ? zkr__request_all(d->c, rs, n, deadline) : ZOK;
    if (rc == ZKR_OK && zrc != ZOK)
        rc = zkr__rq_error(zrc);
    for (size_t i = 0; rc == ZKR_OK && i < n; i++) {
        int r = rs[i].rc == ZOK ? zkr__disc_parse(rs[i].value, rs[i].value ? (size_t)rs[i].value_len : 0, &v[*got])
                                : zkr__rq_error(rs[i].rc);
        if (r == ZKR_OK)
            ++*got;
        else if (r == ZKR_EBADDATA)
            zkr__log(d->c, ZKR_LOG_WARN, "discovery: %s is not a service instance: left out", paths[i]);
        else if (r != ZKR_ENONODE) /* (gone meanwhile: left out) */
            rc = r;
    }
    for (size_t i = 0; rs && i < n; i++)
        zkr__rq_clear(&rs[i]);
    for (size_t i = 0; paths && i < n; i++)
        free(paths[i]);
    free(paths);
    free(rs);
    return rc;
}

int zkr_discovery_instances(zkr_discovery_t *d, const char *name, zkr_instance_t ***insts, size_t *count,
                            int64_t timeout_ms)
{
    if (insts)
        *insts = NULL;
    if (count)
        *count = 0;
    if (!d || !insts || !count || !zkr__disc_segment_valid(name))
        return ZKR_EINVAL;
    int64_t deadline = zkr__deadline(timeout_ms);
    char *dir = zkr__disc_path(d->base, name, NULL);
    char **ids = NULL;
    size_t n = 0, got = 0;
    int rc = dir ? children(d->c, dir, &ids, &n, deadline) : ZKR_ENOMEM;
    zkr_instance_t **v = rc == ZKR_OK && n > 0 ? calloc(n, sizeof *v) : NULL;
    if (rc == ZKR_OK && n > 0)
        rc = v ? read_all(d, dir, ids, n, v, &got, deadline) : ZKR_ENOMEM;
    zkr_strings_free(ids, n);
    free(dir);
    if (rc != ZKR_OK || got == 0) {
        zkr_instances_free(v, got);
        return rc;
    }
    *insts = v;
    *count = got;
    return ZKR_OK;
}

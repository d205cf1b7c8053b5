/* Listings: an answer's copy, the one synchronous listing sorted in the
 * driver's order, and the participants of a queue (its children, so
 * sorted, as full paths). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"

int zkr__listing_copy(int zrc, const struct String_vector *sv, zkr__strvec_t *out)
{
    out->v = NULL;
    out->n = 0;
    if (zrc == ZOK && sv && sv->count > 0 && zkr__strvec_copy(out, sv->data, (size_t)sv->count) != 0)
        zrc = ZSYSTEMERROR;
    return zrc;
}

int zkr__queue_list(zhandle_t *zh, const char *dir, watcher_fn w, void *wctx, const zkr__driver_t *drv,
                    zkr__strvec_t *out, int *zrc)
{
    struct String_vector sv = {0, NULL};
    out->v = NULL;
    out->n = 0;
    int z = w ? zoo_wget_children(zh, dir, w, wctx, &sv) : zoo_get_children(zh, dir, 0, &sv);
    if (zrc)
        *zrc = z;
    if (z == ZNONODE)
        return ZKR_ENONODE;
    if (z != ZOK)
        return zkr__zk_error(z);
    z = zkr__listing_copy(z, &sv, out);
    deallocate_String_vector(&sv);
    if (z != ZOK || zkr__queue_sort(drv, out) != ZKR_OK) {
        zkr__strvec_free(out);
        return ZKR_ENOMEM;
    }
    return ZKR_OK;
}

int zkr__queue_participants(zkr_client_t *c, const char *dir, const zkr__driver_t *drv, zkr__strvec_t *out)
{
    out->v = NULL;
    out->n = 0;
    zkr__zh_t *h;
    int rc = zkr__client_get_handle(c, &h);
    if (rc != ZKR_OK)
        return rc;
    zkr__strvec_t kids;
    int zrc;
    rc = zkr__queue_list(zkr__zh(h), dir, NULL, NULL, drv, &kids, &zrc);
    zkr__zh_answer(zkr__zh(h), zrc);
    zkr__client_put_handle(c, h);
    if (rc == ZKR_ENONODE)
        return ZKR_OK;
    if (rc != ZKR_OK)
        return rc;
    for (size_t i = 0; i < kids.n; i++) {
        char *full = zkr__path_join(dir, kids.v[i]);
        if (!full) {
            zkr__strvec_free(&kids);
            return ZKR_ENOMEM;
        }
        free(kids.v[i]);
        kids.v[i] = full;
    }
    *out = kids;
    return ZKR_OK;
}

int zkr__participants(zkr_client_t *c, const char *dir, const zkr__driver_t *drv, char ***paths, size_t *count)
{
    if (!paths || !count)
        return ZKR_EINVAL;
    *paths = NULL;
    *count = 0;
    int rc = zkr__client_enter(c);
    if (rc != ZKR_OK)
        return rc;
    zkr__strvec_t sv;
    rc = zkr__queue_participants(c, dir, drv, &sv);
    zkr__client_leave(c);
    if (rc == ZKR_OK) {
        *paths = sv.v;
        *count = sv.n;
    }
    return rc;
}

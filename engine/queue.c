/* The participants of a queue: its children, sorted in the driver's
 * order, as full paths. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"

int zkr__queue_participants(zkr_client_t *c, const char *dir, const zkr__driver_t *drv, zkr__strvec_t *out)
{
    out->v = NULL;
    out->n = 0;
    zkr__zh_t *h;
    int rc = zkr__client_get_handle(c, &h);
    if (rc != ZKR_OK)
        return rc;
    zkr__strvec_t kids;
    rc = zkr__list(c, h, dir, &kids);
    zkr__client_put_handle(c, h);
    if (rc != ZKR_OK)
        return rc;
    if (zkr__sort_children(kids.v, kids.n, drv->key, drv->key_marker) != 0) {
        zkr__strvec_free(&kids);
        return ZKR_ENOMEM;
    }
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

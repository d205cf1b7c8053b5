/* Decisions on a listing: the drivers' predicate (first n hold it, watch
 * the node n places before ours), the mutex driver, the one sort of a
 * listing in a driver's order, and the one place that sorts a listing,
 * finds our node and asks the driver. */
#include "config.h"

#include "engine/engine.h"

int zkr__decide_first_n(const void *arg, char *const *sorted, size_t n, size_t ours, size_t *watch)
{
    (void)sorted;
    (void)n;
    size_t max = (size_t)*(const int *)arg;
    if (ours < max)
        return 1;
    *watch = ours - max;
    return 0;
}

static const int one_holder = 1;

const zkr__driver_t zkr__lock_driver = {
    .marker = "lock-",
    .key = zkr__sort_key,
    .key_marker = "lock-",
    .decide = zkr__decide_first_n,
    .decide_arg = &one_holder,
    .next_in_line = 1,
};

int zkr__queue_sort(const zkr__driver_t *drv, zkr__strvec_t *kids)
{
    return zkr__sort_children(kids->v, kids->n, drv->key, drv->key_marker) != 0 ? ZKR_ENOMEM : ZKR_OK;
}

int zkr__queue_decide(const zkr__driver_t *drv, zkr__strvec_t *kids, const char *name, size_t *watch)
{
    if (zkr__queue_sort(drv, kids) != ZKR_OK)
        return ZKR_ENOMEM;
    long ours = zkr__strvec_find(kids, name);
    if (ours < 0)
        return ZKR__DECIDE_GONE;
    *watch = 0;
    int d = drv->decide(drv->decide_arg, kids->v, kids->n, (size_t)ours, watch);
    if (d == 0 && *watch >= kids->n)
        return ZKR_EZOOKEEPER; /* a driver bug, not a server answer */
    return d;
}


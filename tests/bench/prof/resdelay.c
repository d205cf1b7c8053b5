/* Profiling aid of scripts/bench-profile.sh (LD_PRELOAD, not part of the
 * library): every ZooKeeper handle gets
 * zoo_set_servers_resolution_delay(zh, $RESDELAY_MS, default 1000), so the
 * C client stops re-resolving its host list each time its I/O thread
 * polls.  Measures what that routine resolution costs a program. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <zookeeper/zookeeper.h>

static void set_delay(zhandle_t *zh)
{
    const char *ms = getenv("RESDELAY_MS");
    if (zh)
        zoo_set_servers_resolution_delay(zh, ms ? atoi(ms) : 1000);
}

zhandle_t *zookeeper_init2(const char *host, watcher_fn fn, int recv_timeout, const clientid_t *clientid,
                           void *context, int flags, log_callback_fn log_callback)
{
    static zhandle_t *(*real)(const char *, watcher_fn, int, const clientid_t *, void *, int, log_callback_fn);
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "zookeeper_init2");
    zhandle_t *zh = real(host, fn, recv_timeout, clientid, context, flags, log_callback);
    set_delay(zh);
    return zh;
}

zhandle_t *zookeeper_init(const char *host, watcher_fn fn, int recv_timeout, const clientid_t *clientid,
                          void *context, int flags)
{
    static zhandle_t *(*real)(const char *, watcher_fn, int, const clientid_t *, void *, int);
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "zookeeper_init");
    zhandle_t *zh = real(host, fn, recv_timeout, clientid, context, flags);
    set_delay(zh);
    return zh;
}

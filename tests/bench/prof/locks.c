/* Profiling aid of scripts/bench-profile.sh (LD_PRELOAD, not part of the
 * library), mutrace by hand: per pthread mutex the number of locks, how many
 * found it taken, the time spent waiting for it and holding it, and its
 * callers (object + offset, resolved by the script with addr2line); plus
 * the number of calls of each ZooKeeper C client request function.  The
 * report goes to $MUTRACE_OUT (or stderr) when the program exits. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zookeeper/zookeeper.h>

#define N 8192
#define NC 24
typedef struct {
    _Atomic(void *) m;
    atomic_long locks, contended, wait_ns, hold_ns;
    long t_locked;
    _Atomic(void *) caller[NC];
    atomic_long ccount[NC];
    atomic_long cwait[NC];
} ent_t;
static ent_t tab[N];
static int (*r_lock)(pthread_mutex_t *), (*r_unlock)(pthread_mutex_t *), (*r_trylock)(pthread_mutex_t *);
static int (*r_cwait)(pthread_cond_t *, pthread_mutex_t *);
static int (*r_ctwait)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
static __thread int inside;

static long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static void init(void)
{
    if (r_lock)
        return;
    r_lock = dlsym(RTLD_NEXT, "pthread_mutex_lock");
    r_unlock = dlsym(RTLD_NEXT, "pthread_mutex_unlock");
    r_trylock = dlsym(RTLD_NEXT, "pthread_mutex_trylock");
    r_cwait = dlvsym(RTLD_NEXT, "pthread_cond_wait", "GLIBC_2.3.2");
    r_ctwait = dlvsym(RTLD_NEXT, "pthread_cond_timedwait", "GLIBC_2.3.2");
    if (!r_cwait) r_cwait = dlsym(RTLD_NEXT, "pthread_cond_wait");
    if (!r_ctwait) r_ctwait = dlsym(RTLD_NEXT, "pthread_cond_timedwait");
}

static ent_t *ent(void *m)
{
    uintptr_t h = ((uintptr_t)m >> 3) * 2654435761u;
    for (int i = 0; i < N; i++) {
        ent_t *e = &tab[(h + i) % N];
        void *cur = atomic_load(&e->m);
        if (cur == m)
            return e;
        if (!cur) {
            void *z = NULL;
            if (atomic_compare_exchange_strong(&e->m, &z, m) || z == m)
                return e;
        }
    }
    return NULL;
}

static void note_caller(ent_t *e, void *ra, long waited)
{
    for (int i = 0; i < NC; i++) {
        void *c = atomic_load(&e->caller[i]);
        if (c == ra || (!c && (atomic_compare_exchange_strong(&e->caller[i], &c, ra) || c == ra))) {
            atomic_fetch_add(&e->ccount[i], 1);
            atomic_fetch_add(&e->cwait[i], waited);
            return;
        }
    }
}

int pthread_mutex_lock(pthread_mutex_t *m)
{
    init();
    if (inside)
        return r_lock(m);
    inside = 1;
    ent_t *e = ent(m);
    long waited = 0;
    int rc = r_trylock(m);
    if (rc != 0) {
        long t0 = now_ns();
        rc = r_lock(m);
        waited = now_ns() - t0;
        if (e) {
            atomic_fetch_add(&e->contended, 1);
            atomic_fetch_add(&e->wait_ns, waited);
        }
    }
    if (e) {
        atomic_fetch_add(&e->locks, 1);
        e->t_locked = now_ns();
        note_caller(e, __builtin_return_address(0), waited);
    }
    inside = 0;
    return rc;
}

int pthread_mutex_unlock(pthread_mutex_t *m)
{
    init();
    if (!inside) {
        ent_t *e = ent(m);
        if (e && e->t_locked)
            atomic_fetch_add(&e->hold_ns, now_ns() - e->t_locked);
    }
    return r_unlock(m);
}

int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
    init();
    ent_t *e = ent(m);
    if (e && e->t_locked)
        atomic_fetch_add(&e->hold_ns, now_ns() - e->t_locked);
    int rc = r_cwait(c, m);
    if (e)
        e->t_locked = now_ns();
    return rc;
}

int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *ts)
{
    init();
    ent_t *e = ent(m);
    if (e && e->t_locked)
        atomic_fetch_add(&e->hold_ns, now_ns() - e->t_locked);
    int rc = r_ctwait(c, m, ts);
    if (e)
        e->t_locked = now_ns();
    return rc;
}

/* zoo_* calls */
static atomic_long zc[24];
static const char *zn[24] = {"zoo_acreate2", "zoo_aget_children", "zoo_wget", "zoo_delete", "zoo_get_children",
                             "zoo_exists", "zoo_create", "zoo_adelete", "zoo_awget", "zoo_wexists", "zoo_get", "zoo_aget",
                             "zoo_create2", "zoo_multi", "zoo_amulti", "zoo_awexists", "zoo_aexists",
                             "zoo_wget_children", "zoo_awget_children", "zoo_async", "zoo_set", "zoo_aset",
                             "zoo_get_children2", "zoo_aget_children2"};
#define WRAP(i, ret, name, params, args)                                    \
    ret name params                                                         \
    {                                                                       \
        static ret(*real) params;                                           \
        if (!real)                                                          \
            real = dlsym(RTLD_NEXT, #name);                                 \
        atomic_fetch_add(&zc[i], 1);                                        \
        return real args;                                                   \
    }
WRAP(0, int, zoo_acreate2, (zhandle_t * zh, const char *path, const char *value, int valuelen, const struct ACL_vector *acl, int mode, string_stat_completion_t completion, const void *data), (zh, path, value, valuelen, acl, mode, completion, data))
WRAP(1, int, zoo_aget_children, (zhandle_t * zh, const char *path, int watch, strings_completion_t completion, const void *data), (zh, path, watch, completion, data))
WRAP(2, int, zoo_wget, (zhandle_t * zh, const char *path, watcher_fn watcher, void *wctx, char *buffer, int *buffer_len, struct Stat *stat), (zh, path, watcher, wctx, buffer, buffer_len, stat))
WRAP(3, int, zoo_delete, (zhandle_t * zh, const char *path, int version), (zh, path, version))
WRAP(4, int, zoo_get_children, (zhandle_t * zh, const char *path, int watch, struct String_vector *strings), (zh, path, watch, strings))
WRAP(5, int, zoo_exists, (zhandle_t * zh, const char *path, int watch, struct Stat *stat), (zh, path, watch, stat))
WRAP(6, int, zoo_create, (zhandle_t * zh, const char *path, const char *value, int valuelen, const struct ACL_vector *acl, int mode, char *path_buffer, int path_buffer_len), (zh, path, value, valuelen, acl, mode, path_buffer, path_buffer_len))
WRAP(9, int, zoo_wexists, (zhandle_t * zh, const char *path, watcher_fn watcher, void *wctx, struct Stat *stat), (zh, path, watcher, wctx, stat))
WRAP(7, int, zoo_adelete, (zhandle_t * zh, const char *path, int version, void_completion_t completion, const void *data), (zh, path, version, completion, data))
WRAP(8, int, zoo_awget, (zhandle_t * zh, const char *path, watcher_fn watcher, void *wctx, data_completion_t completion, const void *data), (zh, path, watcher, wctx, completion, data))
WRAP(15, int, zoo_awexists, (zhandle_t * zh, const char *path, watcher_fn watcher, void *wctx, stat_completion_t completion, const void *data), (zh, path, watcher, wctx, completion, data))
WRAP(16, int, zoo_aexists, (zhandle_t * zh, const char *path, int watch, stat_completion_t completion, const void *data), (zh, path, watch, completion, data))
WRAP(17, int, zoo_wget_children, (zhandle_t * zh, const char *path, watcher_fn watcher, void *wctx, struct String_vector *strings), (zh, path, watcher, wctx, strings))
WRAP(18, int, zoo_awget_children, (zhandle_t * zh, const char *path, watcher_fn watcher, void *wctx, strings_completion_t completion, const void *data), (zh, path, watcher, wctx, completion, data))
WRAP(19, int, zoo_async, (zhandle_t * zh, const char *path, string_completion_t completion, const void *data), (zh, path, completion, data))
WRAP(13, int, zoo_multi, (zhandle_t * zh, int count, const zoo_op_t *ops, zoo_op_result_t *results), (zh, count, ops, results))
WRAP(14, int, zoo_amulti, (zhandle_t * zh, int count, const zoo_op_t *ops, zoo_op_result_t *results, void_completion_t completion, const void *data), (zh, count, ops, results, completion, data))
WRAP(10, int, zoo_get, (zhandle_t * zh, const char *path, int watch, char *buffer, int *buffer_len, struct Stat *stat), (zh, path, watch, buffer, buffer_len, stat))

__attribute__((destructor)) static void report(void)
{
    FILE *f = stderr;
    const char *p = getenv("MUTRACE_OUT");
    if (p)
        f = fopen(p, "w");
    if (!f)
        return;
    fprintf(f, "zoo calls:");
    for (int i = 0; i < 24; i++)
        if (zc[i])
            fprintf(f, " %s=%ld", zn[i], (long)zc[i]);
    fprintf(f, "\n");
    /* top 8 mutexes by wait, then by locks */
    for (int pass = 0; pass < 2; pass++) {
        int used[8] = {0};
        int top[8];
        for (int k = 0; k < 8; k++) {
            long best = -1;
            top[k] = -1;
            for (int i = 0; i < N; i++) {
                if (!tab[i].m) continue;
                int skip = 0;
                for (int j = 0; j < k; j++) if (top[j] == i) skip = 1;
                if (skip) continue;
                long v = pass == 0 ? tab[i].wait_ns : tab[i].locks;
                if (v > best) { best = v; top[k] = i; }
            }
        }
        (void)used;
        fprintf(f, "--- by %s ---\n", pass == 0 ? "wait" : "locks");
        for (int k = 0; k < 8 && top[k] >= 0; k++) {
            ent_t *e = &tab[top[k]];
            fprintf(f, "mutex %p: locks %ld contended %ld (%.1f%%) wait %.1f ms hold %.1f ms\n", atomic_load(&e->m),
                    (long)e->locks, (long)e->contended, e->locks ? 100.0 * e->contended / e->locks : 0,
                    e->wait_ns / 1e6, e->hold_ns / 1e6);
            for (int i = 0; i < NC; i++) {
                void *c = e->caller[i];
                if (!c) break;
                Dl_info di;
                if (dladdr(c, &di) && di.dli_fname)
                    fprintf(f, "    %8ld locks %9.1f ms wait  %s+0x%lx %s\n", (long)e->ccount[i], e->cwait[i] / 1e6,
                            strrchr(di.dli_fname, '/') ? strrchr(di.dli_fname, '/') + 1 : di.dli_fname,
                            (unsigned long)((char *)c - (char *)di.dli_fbase), di.dli_sname ? di.dli_sname : "");
            }
        }
    }
    if (f != stderr)
        fclose(f);
}

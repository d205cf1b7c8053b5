/* zkr_bench: the zkrecipes implementation of every timed scenario. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zkr/zkr.h>

#include "tests/bench/bench.h"

#define ZKR_BENCH_TIMEOUT_MS 60000

static void *zkr_session_open(const bench_cfg_t *cfg, int i)
{
    (void)i;
    zkr_client_options_t o;
    zkr_client_options_init(&o);
    o.zk_log_level = 0;
    o.session_timeout_ms = 20000;
    zkr_client_t *c = NULL;
    int rc = zkr_client_open(&c, cfg->hosts, &o);
    if (rc != ZKR_OK) {
        fprintf(stderr, "zkr_bench: zkr_client_open %s: %s\n", cfg->hosts, zkr_strerror(rc));
        return NULL;
    }
    return c;
}

static void zkr_session_close(void *s)
{
    zkr_client_close(s);
}

typedef struct zkr_thread {
    bench_kind_t kind;
    zkr_mutex_t *mutex;
    zkr_mutex_t **parts;
    int nparts;
    zkr_multilock_t *multi;
    zkr_semaphore_t *sem;
    zkr_lease_t *lease;
    zkr_rwlock_t *rw;
} zkr_thread_t;

static void zkr_thread_fini(void *p)
{
    zkr_thread_t *z = p;
    if (!z)
        return;
    if (z->lease)
        zkr_lease_release(z->lease);
    zkr_multilock_free(z->multi);
    for (int i = 0; i < z->nparts; i++)
        zkr_mutex_free(z->parts[i]);
    free(z->parts);
    zkr_mutex_free(z->mutex);
    zkr_semaphore_free(z->sem);
    zkr_rwlock_free(z->rw);
    free(z);
}

static void *zkr_thread_init(const bench_cfg_t *cfg, void *session, int t)
{
    zkr_client_t *c = session;
    zkr_thread_t *z = calloc(1, sizeof *z);
    if (!z)
        return NULL;
    z->kind = cfg->kind;
    char *path = bench_lock_path(cfg, t, -1);
    int rc = ZKR_OK;
    switch (cfg->kind) {
    case BK_MUTEX:
        rc = zkr_mutex_new(&z->mutex, c, path);
        break;
    case BK_MULTI: {
        z->parts = calloc((size_t)cfg->multi, sizeof *z->parts);
        zkr_lock_ref_t *refs = calloc((size_t)cfg->multi, sizeof *refs);
        if (!z->parts || !refs) {
            free(refs);
            rc = ZKR_ENOMEM;
            break;
        }
        for (int i = 0; i < cfg->multi && rc == ZKR_OK; i++) {
            char *pp = bench_lock_path(cfg, t, i);
            rc = zkr_mutex_new(&z->parts[i], c, pp);
            free(pp);
            if (rc == ZKR_OK) {
                z->nparts++;
                refs[i] = zkr_mutex_ref(z->parts[i]);
            }
        }
        if (rc == ZKR_OK)
            rc = zkr_multilock_new(&z->multi, refs, (size_t)cfg->multi);
        free(refs);
        break;
    }
    case BK_SEM:
        rc = zkr_semaphore_new(&z->sem, c, path, cfg->leases);
        break;
    case BK_READ:
    case BK_RWMIX:
        rc = zkr_rwlock_new(&z->rw, c, path);
        break;
    }
    free(path);
    if (rc != ZKR_OK) {
        fprintf(stderr, "zkr_bench: zkr: setup: %s\n", zkr_strerror(rc));
        zkr_thread_fini(z);
        return NULL;
    }
    return z;
}

static int report(const char *what, int rc)
{
    if (rc != ZKR_OK)
        fprintf(stderr, "zkr_bench: zkr: %s: %s\n", what, zkr_strerror(rc));
    return rc == ZKR_OK ? 0 : -1;
}

static int zkr_acquire(void *p, int write_op)
{
    zkr_thread_t *z = p;
    switch (z->kind) {
    case BK_MUTEX: return report("mutex acquire", zkr_mutex_acquire(z->mutex, ZKR_BENCH_TIMEOUT_MS));
    case BK_MULTI: return report("multilock acquire", zkr_multilock_acquire(z->multi, ZKR_BENCH_TIMEOUT_MS));
    case BK_SEM: return report("lease acquire", zkr_semaphore_acquire(z->sem, ZKR_BENCH_TIMEOUT_MS, &z->lease));
    case BK_READ: return report("read acquire", zkr_rwlock_read_acquire(z->rw, ZKR_BENCH_TIMEOUT_MS));
    case BK_RWMIX:
        return write_op ? report("write acquire", zkr_rwlock_write_acquire(z->rw, ZKR_BENCH_TIMEOUT_MS))
                        : report("read acquire", zkr_rwlock_read_acquire(z->rw, ZKR_BENCH_TIMEOUT_MS));
    }
    return -1;
}

static int zkr_release(void *p, int write_op)
{
    zkr_thread_t *z = p;
    int rc = -1;
    switch (z->kind) {
    case BK_MUTEX: return report("mutex release", zkr_mutex_release(z->mutex));
    case BK_MULTI: return report("multilock release", zkr_multilock_release(z->multi));
    case BK_SEM:
        rc = report("lease return", zkr_lease_release(z->lease));
        z->lease = NULL;
        return rc;
    case BK_READ: return report("read release", zkr_rwlock_read_release(z->rw));
    case BK_RWMIX:
        return write_op ? report("write release", zkr_rwlock_write_release(z->rw))
                        : report("read release", zkr_rwlock_read_release(z->rw));
    }
    return rc;
}

const bench_impl_t bench_impl_zkr = {
    "zkr", zkr_session_open, zkr_session_close, zkr_thread_init, zkr_thread_fini, zkr_acquire, zkr_release,
};

/* zkr_bench: a single-instance Redis lock, for scale: SET key token NX PX
 * ttl to acquire, a Lua compare-and-delete to release.  A waiter polls
 * every millisecond (Redis has no queue and no notification).  No fencing,
 * no session: the lock is only as safe as the TTL guess.  Only the mutex
 * scenarios.  Built only when configure found hiredis. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/bench/bench.h"

#if defined(HAVE_HIREDIS_HIREDIS_H) && defined(HAVE_LIBHIREDIS)
#include <hiredis/hiredis.h>

#define TTL_MS 30000
static const char *UNLOCK_LUA =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

/* sessions: only the address; every thread has its own connection */
static void *redis_session_open(const bench_cfg_t *cfg, int i)
{
    (void)i;
    return (void *)cfg;
}

static void redis_session_close(void *s)
{
    (void)s;
}

typedef struct redis_thread {
    redisContext *rc;
    char key[300];
    char token[64];
    char sha[64];
    unsigned long seq;
    int t;
    double deadline_ms;
} redis_thread_t;

static void redis_thread_fini(void *p)
{
    redis_thread_t *r = p;
    if (!r)
        return;
    if (r->rc)
        redisFree(r->rc);
    free(r);
}

static void *redis_thread_init(const bench_cfg_t *cfg, void *session, int t)
{
    (void)session;
    if (cfg->kind != BK_MUTEX) {
        fprintf(stderr, "zkr_bench: redis: only the mutex scenarios\n");
        return NULL;
    }
    char host[128];
    snprintf(host, sizeof host, "%s", cfg->redis);
    char *colon = strrchr(host, ':');
    if (!colon)
        return NULL;
    *colon = '\0';
    int port = atoi(colon + 1);
    redis_thread_t *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->t = t;
    struct timeval tv = {10, 0};
    r->rc = redisConnectWithTimeout(host, port, tv);
    if (!r->rc || r->rc->err) {
        fprintf(stderr, "zkr_bench: redis: connect %s: %s\n", cfg->redis, r->rc ? r->rc->errstr : "no memory");
        redis_thread_fini(r);
        return NULL;
    }
    char *path = bench_lock_path(cfg, t, -1);
    snprintf(r->key, sizeof r->key, "zkr-bench:%s", path);
    free(path);
    redisReply *rep = redisCommand(r->rc, "SCRIPT LOAD %s", UNLOCK_LUA);
    if (!rep || rep->type != REDIS_REPLY_STRING) {
        fprintf(stderr, "zkr_bench: redis: SCRIPT LOAD failed\n");
        if (rep)
            freeReplyObject(rep);
        redis_thread_fini(r);
        return NULL;
    }
    snprintf(r->sha, sizeof r->sha, "%s", rep->str);
    freeReplyObject(rep);
    return r;
}

static int redis_acquire(void *p, int write_op)
{
    (void)write_op;
    redis_thread_t *r = p;
    /* a token unique to this hold: thread, sequence, time */
    snprintf(r->token, sizeof r->token, "%d-%lu-%.0f-%d", r->t, ++r->seq, bench_now_ms() * 1e3, rand());
    double give_up = bench_now_ms() + 60000;
    for (;;) {
        redisReply *rep = redisCommand(r->rc, "SET %s %s NX PX %d", r->key, r->token, TTL_MS);
        if (!rep) {
            fprintf(stderr, "zkr_bench: redis: SET: %s\n", r->rc->errstr);
            return -1;
        }
        int ok = rep->type == REDIS_REPLY_STATUS && strcmp(rep->str, "OK") == 0;
        int busy = rep->type == REDIS_REPLY_NIL;
        freeReplyObject(rep);
        if (ok)
            return 0;
        if (!busy || bench_now_ms() > give_up)
            return -1;
        struct timespec ts = {0, 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

static int redis_release(void *p, int write_op)
{
    (void)write_op;
    redis_thread_t *r = p;
    redisReply *rep = redisCommand(r->rc, "EVALSHA %s 1 %s %s", r->sha, r->key, r->token);
    if (!rep) {
        fprintf(stderr, "zkr_bench: redis: EVALSHA: %s\n", r->rc->errstr);
        return -1;
    }
    int ok = rep->type == REDIS_REPLY_INTEGER && rep->integer == 1;
    freeReplyObject(rep);
    return ok ? 0 : -1;
}

const bench_impl_t bench_impl_redis = {
    "redis", redis_session_open, redis_session_close, redis_thread_init, redis_thread_fini,
    redis_acquire, redis_release,
};
#else
const bench_impl_t bench_impl_redis = {"redis", NULL, NULL, NULL, NULL, NULL, NULL};
#endif

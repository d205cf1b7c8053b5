/* zkr_bench: one scenario, one implementation, one timed run.  Shared
 * declarations of the driver (zkr_bench.c) and its implementations
 * (bench_zkr.c: zkrecipes, bench_floor.c: the raw C client, bench_redis.c:
 * a Redis lock).  Benchmarks print figures; they never assert a speed. */
#ifndef ZKR_BENCH_H
#define ZKR_BENCH_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* What one worker thread does per operation. */
typedef enum bench_kind {
    BK_MUTEX,  /* acquire + release one mutex */
    BK_MULTI,  /* acquire + release a multi-lock of `multi` mutexes */
    BK_SEM,    /* acquire + return one lease of a semaphore of `leases` */
    BK_READ,   /* read lock of an rwlock */
    BK_RWMIX,  /* 90 % read, 10 % write on one rwlock */
} bench_kind_t;

typedef struct bench_cfg {
    const char *scenario;
    const char *impl;
    const char *hosts;   /* ZooKeeper connection string */
    const char *redis;   /* host:port of the Redis server */
    const char *base;    /* base path (unique per run) */
    bench_kind_t kind;
    int threads;         /* worker threads */
    int sessions;        /* sessions (threads are spread over them) */
    int shared;          /* 1: every thread uses one lock; 0: one each */
    int multi;           /* parts of a multi-lock */
    int leases;          /* max leases of a semaphore */
    int handoff;         /* 1: record hand-off latency, else cycle latency */
    double seconds;      /* run length (ignored when cycles > 0) */
    long cycles;         /* > 0: each thread does exactly this many ops */
} bench_cfg_t;

/* One implementation: per-session and per-thread state, and one op. */
typedef struct bench_impl {
    const char *name;
    /* open session number `i` (0 .. sessions-1); NULL on failure */
    void *(*session_open)(const bench_cfg_t *cfg, int i);
    void (*session_close)(void *session);
    /* per-thread state for thread `t` on `session`; NULL on failure */
    void *(*thread_init)(const bench_cfg_t *cfg, void *session, int t);
    void (*thread_fini)(void *tctx);
    /* 0 when held; write_op tells BK_RWMIX which half to take */
    int (*acquire)(void *tctx, int write_op);
    int (*release)(void *tctx, int write_op);
} bench_impl_t;

extern const bench_impl_t bench_impl_zkr;
extern const bench_impl_t bench_impl_floor;  /* create + delete */
extern const bench_impl_t bench_impl_floor2; /* create + list + delete */
extern const bench_impl_t bench_impl_redis;  /* .session_open NULL without hiredis */

/* Helpers of the driver. */
double bench_now_ms(void);
void bench_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* "<base>/lock" for a shared lock, "<base>/t<N>" for thread N's own,
 * "<base>/t<N>-<part>" for part `part` of a multi-lock (malloc'd). */
char *bench_lock_path(const bench_cfg_t *cfg, int t, int part);

/* Special scenarios (bench_special.c). */
int bench_waiters(const bench_cfg_t *cfg, int waiters);
int bench_heap(const bench_cfg_t *cfg, int held);
/* Leader election (bench_leader.c): hand-over and join; count participants
 * (0: the scenario's). */
int bench_leader(const bench_cfg_t *cfg, int count);
/* The cache and the proxy (bench_cache.c): impl "zkr" or "zkrnodata";
 * count: cachetree's nodes, cachelatency's changes (0: the default);
 * proxy: "HOST:PORT/CONTROL_PORT" for cacheresync. */
int bench_cache(const bench_cfg_t *cfg, const char *impl, int count, const char *proxy);
/* Service discovery (bench_discovery.c): register (timed until the server
 * confirmed), query100 (the -N instances of disctree's service), and the
 * set-up disctree (-N instances under cfg->base). */
int bench_discovery(const bench_cfg_t *cfg, int count);

/* The counters under contention (bench_counter.c): atomic4, count4. */
int bench_counter(const bench_cfg_t *cfg);

#endif

/* zkr_bench: run ONE scenario for ONE implementation and print one
 * machine-readable line:
 *
 *   RESULT impl=I scenario=S threads=T sessions=N ops=K secs=X rate=R
 *          p50_ms=A p99_ms=B lat=cycle|handoff errors=E [extra=...]
 *
 *   zkr_bench -i IMPL -c SCENARIO -z HOSTS [-r REDIS_HOST:PORT] [-t SECONDS]
 *             [-n CYCLES] [-S SESSIONS] [-T THREADS] [-N COUNT] [-b BASE]
 *             [-P PROXY_HOST:PORT/CONTROL_PORT]
 *
 * IMPL: zkr, floor (create + delete), floor2 (create + list + delete), redis.
 * SCENARIO: uncontended, threads64, contended4, contended16, multilock5,
 * semaphore, semaphore16, read4, rw90 (timed); waiters (-N waiters, drain
 * time) and heap (-N held locks, heap bytes per held lock) for zkr;
 * latch10, selector10 (leader hand-over, -N participants, timed) and
 * latchjoin100, selectorjoin100 (-N participants join) for zkr
 * (bench_leader.c); cacheload10k, cachelatency (-N changes), cachewatches,
 * cacheresync (-P: a proxy started by `-c proxy`) for zkr and zkrnodata
 * (the cache without data), and the set-up cachetree (-N nodes under -b)
 * and proxy (bench_cache.c); atomic4 and count4 (4 sessions incrementing
 * one atomic long, or one shared count by try_set) for zkr
 * (bench_counter.c); register, query100 (-N instances) and the
 * set-up disctree (-N instances under -b) for zkr (bench_discovery.c).
 * With -n every thread does exactly CYCLES operations (used under
 * callgrind).  Benchmarks print figures; they never assert a speed. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/bench/bench.h"

typedef struct scenario {
    const char *name;
    bench_kind_t kind;
    int threads, sessions, shared, multi, leases, handoff;
} scenario_t;

static const scenario_t scenarios[] = {
    {"uncontended", BK_MUTEX, 1, 1, 0, 0, 0, 0},
    {"threads64", BK_MUTEX, 64, 1, 0, 0, 0, 0},
    {"contended4", BK_MUTEX, 4, 4, 1, 0, 0, 1},
    {"contended16", BK_MUTEX, 16, 16, 1, 0, 0, 1},
    {"multilock5", BK_MULTI, 1, 1, 0, 5, 0, 0},
    {"semaphore", BK_SEM, 1, 1, 1, 0, 10, 0},
    {"semaphore16", BK_SEM, 16, 16, 1, 0, 10, 0},
    {"read4", BK_READ, 4, 4, 1, 0, 0, 0},
    {"rw90", BK_RWMIX, 4, 4, 1, 0, 0, 0},
    {"waiters", BK_MUTEX, 1000, 10, 1, 0, 0, 0},
    {"heap", BK_MUTEX, 1, 1, 0, 0, 0, 0},
    {"latch10", BK_MUTEX, 10, 10, 1, 0, 0, 1},
    {"selector10", BK_MUTEX, 10, 10, 1, 0, 0, 1},
    {"latchjoin100", BK_MUTEX, 100, 10, 1, 0, 0, 0},
    {"selectorjoin100", BK_MUTEX, 100, 10, 1, 0, 0, 0},
    {"cacheload10k", BK_MUTEX, 1, 1, 0, 0, 0, 0},
    {"cachelatency", BK_MUTEX, 1, 2, 0, 0, 0, 0},
    {"cachewatches", BK_MUTEX, 1, 1, 0, 0, 0, 0},
    {"cacheresync", BK_MUTEX, 1, 2, 0, 0, 0, 0},
    {"cachetree", BK_MUTEX, 1, 1, 0, 0, 0, 0},
    {"proxy", BK_MUTEX, 1, 1, 0, 0, 0, 0},
    {"atomic4", BK_MUTEX, 4, 4, 1, 0, 0, 0},
    {"count4", BK_MUTEX, 4, 4, 1, 0, 0, 0},
    {"register", BK_MUTEX, 1, 1, 0, 0, 0, 0},
    {"query100", BK_MUTEX, 1, 1, 0, 0, 0, 0},
    {"disctree", BK_MUTEX, 1, 1, 0, 0, 0, 0},
};

double bench_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void bench_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("zkr_bench: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

char *bench_lock_path(const bench_cfg_t *cfg, int t, int part)
{
    char buf[512];
    if (cfg->shared)
        snprintf(buf, sizeof buf, "%s/lock", cfg->base);
    else if (part >= 0)
        snprintf(buf, sizeof buf, "%s/t%d-%d", cfg->base, t, part);
    else
        snprintf(buf, sizeof buf, "%s/t%d", cfg->base, t);
    char *p = strdup(buf);
    if (!p)
        bench_die("out of memory");
    return p;
}

/* ---- the timed runner ------------------------------------------------------- */

typedef struct samples {
    double *v;
    size_t n, cap;
} samples_t;

static void samples_add(samples_t *s, double x)
{
    if (s->n == s->cap) {
        if (s->cap >= (1u << 22))
            return; /* bounded: 4 M samples per thread */
        size_t cap = s->cap ? s->cap * 2 : 1024;
        double *v = realloc(s->v, cap * sizeof *v);
        if (!v)
            return;
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = x;
}

typedef struct run {
    const bench_cfg_t *cfg;
    const bench_impl_t *impl;
    void **sessions;
    pthread_barrier_t start;
    double t0, deadline;
    atomic_int last_holder;
    _Atomic double release_ms;
} run_t;

typedef struct worker {
    run_t *run;
    int t;
    long ops, errors;
    samples_t lat;
    pthread_t th;
} worker_t;

static void *worker_main(void *p)
{
    worker_t *w = p;
    run_t *r = w->run;
    const bench_cfg_t *cfg = r->cfg;
    void *tctx = r->impl->thread_init(cfg, r->sessions[w->t % cfg->sessions], w->t);
    if (!tctx)
        bench_die("%s: thread %d: setup failed", cfg->impl, w->t);
    /* one untimed cycle: parents exist and code paths are warm from here on */
    if (cfg->kind != BK_RWMIX && !cfg->shared && r->impl->acquire(tctx, 0) == 0)
        r->impl->release(tctx, 0);
    pthread_barrier_wait(&r->start);
    unsigned seed = (unsigned)w->t * 2654435761u + 1u;
    for (long i = 0; cfg->cycles > 0 ? i < cfg->cycles : 1; i++) {
        double a0 = bench_now_ms();
        if (cfg->cycles <= 0 && a0 >= r->deadline)
            break;
        int wr = 0;
        if (cfg->kind == BK_RWMIX) {
            seed = seed * 1103515245u + 12345u;
            wr = ((seed >> 16) % 10) == 0;
        }
        if (r->impl->acquire(tctx, wr) != 0) {
            if (++w->errors > 100)
                bench_die("%s: too many failed acquires", cfg->impl);
            continue;
        }
        double got = bench_now_ms();
        if (cfg->handoff) {
            int prev = atomic_load(&r->last_holder);
            double rel = atomic_load(&r->release_ms);
            if (prev >= 0 && prev != w->t && rel > 0 && got <= r->deadline)
                samples_add(&w->lat, got - rel);
            atomic_store(&r->last_holder, w->t);
            atomic_store(&r->release_ms, bench_now_ms());
        }
        if (r->impl->release(tctx, wr) != 0) {
            if (++w->errors > 100)
                bench_die("%s: too many failed releases", cfg->impl);
            continue;
        }
        double end = bench_now_ms();
        if (cfg->cycles > 0 || end <= r->deadline) {
            w->ops++;
            if (!cfg->handoff)
                samples_add(&w->lat, end - a0);
        }
    }
    r->impl->thread_fini(tctx);
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int run_timed(const bench_cfg_t *cfg, const bench_impl_t *impl)
{
    run_t r;
    memset(&r, 0, sizeof r);
    r.cfg = cfg;
    r.impl = impl;
    atomic_init(&r.last_holder, -1);
    atomic_init(&r.release_ms, 0.0);
    r.sessions = calloc((size_t)cfg->sessions, sizeof *r.sessions);
    worker_t *w = calloc((size_t)cfg->threads, sizeof *w);
    if (!r.sessions || !w)
        bench_die("out of memory");
    for (int i = 0; i < cfg->sessions; i++)
        if (!(r.sessions[i] = impl->session_open(cfg, i)))
            bench_die("%s: session %d: open failed", cfg->impl, i);
    pthread_barrier_init(&r.start, NULL, (unsigned)cfg->threads + 1);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    for (int t = 0; t < cfg->threads; t++) {
        w[t].run = &r;
        w[t].t = t;
        if (pthread_create(&w[t].th, &attr, worker_main, &w[t]) != 0)
            bench_die("pthread_create failed");
    }
    pthread_attr_destroy(&attr);
    /* set before this thread reaches the barrier, so before any worker
     * leaves it */
    r.t0 = bench_now_ms();
    r.deadline = r.t0 + cfg->seconds * 1e3;
    pthread_barrier_wait(&r.start);
    long ops = 0, errors = 0;
    size_t n = 0;
    for (int t = 0; t < cfg->threads; t++) {
        pthread_join(w[t].th, NULL);
        ops += w[t].ops;
        errors += w[t].errors;
        n += w[t].lat.n;
    }
    double secs = cfg->cycles > 0 ? (bench_now_ms() - r.t0) / 1e3 : cfg->seconds;
    double *all = malloc((n ? n : 1) * sizeof *all), p50 = 0, p99 = 0;
    if (!all)
        bench_die("out of memory");
    size_t k = 0;
    for (int t = 0; t < cfg->threads; t++) {
        memcpy(all + k, w[t].lat.v, w[t].lat.n * sizeof *all);
        k += w[t].lat.n;
        free(w[t].lat.v);
    }
    if (n) {
        qsort(all, n, sizeof *all, cmp_double);
        p50 = all[(n - 1) / 2];
        p99 = all[(size_t)((double)(n - 1) * 0.99)];
    }
    printf("RESULT impl=%s scenario=%s threads=%d sessions=%d ops=%ld secs=%.3f rate=%.1f "
           "p50_ms=%.3f p99_ms=%.3f lat=%s errors=%ld\n",
           cfg->impl, cfg->scenario, cfg->threads, cfg->sessions, ops, secs, ops / secs, p50, p99,
           cfg->handoff ? "handoff" : "cycle", errors);
    fflush(stdout);
    free(all);
    for (int i = 0; i < cfg->sessions; i++)
        impl->session_close(r.sessions[i]);
    pthread_barrier_destroy(&r.start);
    free(r.sessions);
    free(w);
    return errors ? 1 : 0;
}

static void usage(void)
{
    fprintf(stderr, "usage: zkr_bench -i zkr|zkrnodata|floor|floor2|redis -c SCENARIO -z HOSTS [-r HOST:PORT]\n"
                    "                 [-t SECONDS] [-n CYCLES] [-S SESSIONS] [-T THREADS] [-N COUNT] [-b BASE]\n"
                    "                 [-P PROXY_HOST:PORT/CONTROL_PORT]\n"
                    "scenarios:");
    for (size_t i = 0; i < sizeof scenarios / sizeof *scenarios; i++)
        fprintf(stderr, " %s", scenarios[i].name);
    fputc('\n', stderr);
    exit(2);
}

int main(int argc, char **argv)
{
    bench_cfg_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.seconds = 4;
    int sessions = 0, threads = 0, count = 0, opt;
    const char *impl_name = NULL, *scen = NULL, *base = NULL, *proxy = NULL;
    while ((opt = getopt(argc, argv, "i:c:z:r:t:n:S:T:N:b:P:")) != -1) {
        switch (opt) {
        case 'i': impl_name = optarg; break;
        case 'c': scen = optarg; break;
        case 'z': cfg.hosts = optarg; break;
        case 'r': cfg.redis = optarg; break;
        case 't': cfg.seconds = atof(optarg); break;
        case 'n': cfg.cycles = atol(optarg); break;
        case 'S': sessions = atoi(optarg); break;
        case 'T': threads = atoi(optarg); break;
        case 'N': count = atoi(optarg); break;
        case 'b': base = optarg; break;
        case 'P': proxy = optarg; break;
        default: usage();
        }
    }
    if (!impl_name || !scen || !cfg.hosts || cfg.seconds <= 0 || cfg.seconds > 600 || cfg.cycles < 0 ||
        cfg.cycles > 10000000 || sessions < 0 || sessions > 1000 || threads < 0 || threads > 2000 ||
        count < 0 || count > 100000)
        usage();
    const scenario_t *s = NULL;
    for (size_t i = 0; i < sizeof scenarios / sizeof *scenarios; i++)
        if (strcmp(scenarios[i].name, scen) == 0)
            s = &scenarios[i];
    if (!s)
        usage();
    if (strncmp(s->name, "cache", 5) == 0 || strcmp(s->name, "proxy") == 0) {
        cfg.scenario = s->name;
        cfg.impl = impl_name;
        cfg.base = base ? base : "/zkr-bench/cache10k";
        return bench_cache(&cfg, impl_name, count, proxy);
    }
    if (strcmp(s->name, "register") == 0 || strcmp(s->name, "query100") == 0 || strcmp(s->name, "disctree") == 0) {
        cfg.scenario = s->name;
        cfg.impl = impl_name;
        cfg.base = base ? base : "/zkr-bench/disc100";
        return bench_discovery(&cfg, count);
    }
    const bench_impl_t *impl = NULL;
    if (strcmp(impl_name, "zkr") == 0)
        impl = &bench_impl_zkr;
    else if (strcmp(impl_name, "floor") == 0)
        impl = &bench_impl_floor;
    else if (strcmp(impl_name, "floor2") == 0)
        impl = &bench_impl_floor2;
    else if (strcmp(impl_name, "redis") == 0)
        impl = &bench_impl_redis;
    else
        usage();
    if (!impl->session_open) {
        printf("SKIP impl=%s scenario=%s reason=built-without-hiredis\n", impl_name, scen);
        return 0;
    }
    if (impl == &bench_impl_redis && !cfg.redis)
        bench_die("redis needs -r HOST:PORT");
    cfg.scenario = s->name;
    cfg.impl = impl_name;
    cfg.kind = s->kind;
    cfg.threads = threads ? threads : s->threads;
    cfg.sessions = sessions ? sessions : s->sessions;
    if (cfg.sessions > cfg.threads)
        cfg.sessions = cfg.threads;
    cfg.shared = s->shared;
    cfg.multi = s->multi;
    cfg.leases = s->leases;
    cfg.handoff = s->handoff;
    char basebuf[256];
    if (!base) {
        snprintf(basebuf, sizeof basebuf, "/zkr-bench/%s-%s-%ld", impl_name, s->name, (long)getpid());
        base = basebuf;
    }
    cfg.base = base;
    if (strcmp(s->name, "waiters") == 0)
        return bench_waiters(&cfg, count ? count : 1000);
    if (strcmp(s->name, "heap") == 0)
        return bench_heap(&cfg, count ? count : 10000);
    if (strcmp(s->name, "atomic4") == 0 || strcmp(s->name, "count4") == 0) {
        if (impl != &bench_impl_zkr)
            bench_die("%s: zkr only", s->name);
        return bench_counter(&cfg);
    }
    if (strncmp(s->name, "latch", 5) == 0 || strncmp(s->name, "selector", 8) == 0) {
        if (impl != &bench_impl_zkr)
            bench_die("%s: zkr only", s->name);
        return bench_leader(&cfg, count);
    }
    return run_timed(&cfg, impl);
}

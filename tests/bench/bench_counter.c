/* The counters under contention (zkr_bench -c atomic4 | count4): one
 * thread per session, all on one counter, for the run's seconds.
 *   atomic4  zkr_atomic_long_increment on one atomic long (optimistic,
 *            exponential retry 1 ms base, 29 retries, 50 ms max)
 *   count4   a zkr_count_t each, get + try_set(v + 1) until set
 * An operation is one increment that succeeded; its latency runs from the
 * call (atomic) or the first get (count) to the success; ops and rate
 * count those done by the deadline.  extra:
 * tries_per_op (atomic: optimistic tries; count: try_set calls) and the
 * final value checked against the successes (checked=1).  Benchmarks
 * print figures; they never assert a speed. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/bench/bench.h"
#include "zkr/zkr.h"

typedef struct cworker {
    const bench_cfg_t *cfg;
    zkr_client_t *c;
    pthread_barrier_t *start;
    double deadline;
    long ops, tries, errors;
    double *lat;
    size_t n, cap;
} cworker_t;

static void add_lat(cworker_t *w, double ms)
{
    if (w->n == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 4096;
        double *v = cap <= (1u << 22) ? realloc(w->lat, cap * sizeof *v) : NULL;
        if (!v)
            return;
        w->lat = v;
        w->cap = cap;
    }
    w->lat[w->n++] = ms;
}

static char *counter_path(const bench_cfg_t *cfg)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s/counter", cfg->base);
    return strdup(buf);
}

static void *atomic_main(void *arg)
{
    cworker_t *w = arg;
    char *path = counter_path(w->cfg);
    zkr_atomic_options_t opt;
    zkr_atomic_options_init(&opt);
    zkr_retry_exponential(&opt.retry, 1, 29, 50);
    zkr_atomic_long_t *a = NULL;
    if (!path || zkr_atomic_long_new(&a, w->c, path, &opt) != ZKR_OK)
        bench_die("atomic4: setup failed");
    zkr_atomic_result_t r;
    zkr_atomic_long_get(a, &r); /* warm */
    pthread_barrier_wait(w->start);
    for (;;) {
        double a0 = bench_now_ms();
        if (a0 >= w->deadline)
            break;
        int rc = zkr_atomic_long_increment(a, &r);
        double end = bench_now_ms();
        if (rc != ZKR_OK || !r.succeeded) {
            w->errors++;
            continue;
        }
        w->ops++; /* applied: counted for the check */
        w->tries += r.optimistic_tries + r.promoted_tries;
        if (end <= w->deadline)
            add_lat(w, end - a0); /* timed */
    }
    zkr_atomic_long_free(a);
    free(path);
    return NULL;
}

static void *count_main(void *arg)
{
    cworker_t *w = arg;
    char *path = counter_path(w->cfg);
    zkr_count_t *sc = NULL;
    if (!path || zkr_count_new(&sc, w->c, path, 0) != ZKR_OK || zkr_count_start(sc, 20000) != ZKR_OK)
        bench_die("count4: setup failed");
    pthread_barrier_wait(w->start);
    for (;;) {
        double a0 = bench_now_ms();
        if (a0 >= w->deadline)
            break;
        int set = 0, rc = ZKR_OK;
        while (rc == ZKR_OK && !set) {
            int32_t v, ver;
            rc = zkr_count_get(sc, &v, &ver);
            if (rc == ZKR_OK) {
                rc = zkr_count_try_set(sc, ver, v + 1, &set, 20000);
                w->tries++;
            }
        }
        double end = bench_now_ms();
        if (rc != ZKR_OK) {
            w->errors++;
            continue;
        }
        w->ops++;
        if (end <= w->deadline)
            add_lat(w, end - a0);
    }
    zkr_count_free(sc);
    free(path);
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The server's value: 8 bytes (atomic) or 4 (count), big-endian. */
static long long final_value(zkr_client_t *c, const bench_cfg_t *cfg, int atomic)
{
    char *path = counter_path(cfg);
    long long v = -1;
    if (atomic) {
        zkr_atomic_long_t *a = NULL;
        zkr_atomic_result_t r;
        if (zkr_atomic_long_new(&a, c, path, NULL) == ZKR_OK && zkr_atomic_long_get(a, &r) == ZKR_OK)
            v = r.post_value;
        zkr_atomic_long_free(a);
    } else {
        zkr_count_t *sc = NULL;
        int32_t x, ver;
        if (zkr_count_new(&sc, c, path, 0) == ZKR_OK && zkr_count_start(sc, 20000) == ZKR_OK &&
            zkr_count_get(sc, &x, &ver) == ZKR_OK)
            v = x;
        zkr_count_free(sc);
    }
    free(path);
    return v;
}

int bench_counter(const bench_cfg_t *cfg)
{
    int atomic = strncmp(cfg->scenario, "atomic", 6) == 0;
    int n = cfg->threads;
    zkr_client_t **cs = calloc((size_t)n, sizeof *cs);
    cworker_t *w = calloc((size_t)n, sizeof *w);
    pthread_t *th = calloc((size_t)n, sizeof *th);
    pthread_barrier_t start;
    if (!cs || !w || !th)
        bench_die("out of memory");
    pthread_barrier_init(&start, NULL, (unsigned)n + 1);
    for (int i = 0; i < n; i++) {
        if (zkr_client_open(&cs[i], cfg->hosts, NULL) != ZKR_OK || zkr_client_wait_connected(cs[i], 20000) != ZKR_OK)
            bench_die("%s: session %d: open failed", cfg->scenario, i);
        w[i].cfg = cfg;
        w[i].c = cs[i];
        w[i].start = &start;
    }
    for (int i = 0; i < n; i++)
        if (pthread_create(&th[i], NULL, atomic ? atomic_main : count_main, &w[i]) != 0)
            bench_die("pthread_create failed");
    /* set before this thread reaches the barrier, so before any worker leaves it */
    double dl = bench_now_ms() + cfg->seconds * 1e3;
    for (int i = 0; i < n; i++)
        w[i].deadline = dl;
    pthread_barrier_wait(&start);
    long ops = 0, tries = 0, errors = 0;
    size_t k = 0, total = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(th[i], NULL);
        ops += w[i].ops;
        tries += w[i].tries;
        errors += w[i].errors;
        total += w[i].n;
    }
    double *all = malloc((total ? total : 1) * sizeof *all), p50 = 0, p99 = 0;
    if (!all)
        bench_die("out of memory");
    for (int i = 0; i < n; i++) {
        memcpy(all + k, w[i].lat, w[i].n * sizeof *all);
        k += w[i].n;
        free(w[i].lat);
    }
    if (total) {
        qsort(all, total, sizeof *all, cmp_double);
        p50 = all[(total - 1) / 2];
        p99 = all[(size_t)((double)(total - 1) * 0.99)];
    }
    long long final = final_value(cs[0], cfg, atomic);
    printf("RESULT impl=%s scenario=%s threads=%d sessions=%d ops=%ld secs=%.3f rate=%.1f p50_ms=%.3f "
           "p99_ms=%.3f lat=cycle errors=%ld tries_per_op=%.2f checked=%d\n",
           cfg->impl, cfg->scenario, n, n, (long)total, cfg->seconds, (double)total / cfg->seconds, p50, p99, errors,
           ops ? (double)tries / (double)ops : 0.0, final == ops);
    fflush(stdout);
    free(all);
    for (int i = 0; i < n; i++)
        zkr_client_close(cs[i]);
    pthread_barrier_destroy(&start);
    free(cs);
    free(w);
    free(th);
    return final == ops ? 0 : 1;
}

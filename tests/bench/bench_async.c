/* bench_async: asynchronous acquirers in one poll loop against the
 * blocking equivalent (one thread per acquirer), on one client each way:
 * hand-offs on one contended mutex, or (--spread) each acquirer cycling on
 * a mutex of its own.  The loop releases with zkr_hold_release_async, so it
 * never waits on the network.
 *
 *   bench_async [HOSTS] [--waiters N] [--seconds S] [--path /zkr-bench/async]
 *               [--mode async|blocking|both] [--spread]
 *
 * Prints one line per mode: "async N=.. handoffs/s=..", "blocking N=..
 * handoffs/s=..", and with --mode async or blocking one line in the
 * benchmark suite's format (RESULT impl=... rate=... p50_ms=... p99_ms=...,
 * latency = acquire start to grant).  bench_async_handoff() is the measure
 * itself, for a driver that wants it as a function. */
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <zkr/zkr.h>

int bench_async_handoff(const char *hosts, const char *path, int waiters, double seconds, int async,
                        int spread, double *per_second);

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Acquire latencies (start to grant), in ms; recorded from one thread at
 * a time (the loop, or under lat_mu). */
#define LAT_MAX 1000000
static double *lat;
static size_t lat_n;
static pthread_mutex_t lat_mu = PTHREAD_MUTEX_INITIALIZER;

static void lat_add(double ms)
{
    pthread_mutex_lock(&lat_mu);
    if (lat && lat_n < LAT_MAX)
        lat[lat_n++] = ms;
    pthread_mutex_unlock(&lat_mu);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double lat_pct(double q)
{
    if (lat_n == 0)
        return 0;
    qsort(lat, lat_n, sizeof *lat, cmp_double);
    size_t i = (size_t)(q * (double)(lat_n - 1));
    return lat[i];
}

typedef struct slot {
    zkr_mutex_t *m;    /* its own mutex (--spread), or NULL: the shared one */
    zkr_hold_t *hold;  /* granted, to release in the loop */
    int pending;       /* an acquire or a release in flight */
    int failed;
    long released;
    double started;
} slot_t;

static void released(int rc, void *ctx)
{
    slot_t *s = ctx;
    s->pending = 0;
    if (rc == ZKR_OK)
        s->released++;
    else
        s->failed = 1;
}

static void granted(uint64_t acquire_id, int rc, zkr_hold_t *hold, void *ctx)
{
    (void)acquire_id;
    slot_t *s = ctx;
    s->pending = 0;
    if (rc == ZKR_OK) {
        s->hold = hold;
        lat_add((now_s() - s->started) * 1e3);
    }
    else
        s->failed = 1;
}

typedef struct worker {
    zkr_mutex_t *m;
    const atomic_int *stop;
    long count;
    int failed;
} worker_t;

static void *blocking_main(void *arg)
{
    worker_t *w = arg;
    while (!atomic_load(w->stop)) {
        double t = now_s();
        if (zkr_mutex_acquire(w->m, 10000) != ZKR_OK) {
            w->failed = 1;
            break;
        }
        lat_add((now_s() - t) * 1e3);
        zkr_mutex_release(w->m);
        w->count++;
    }
    return NULL;
}

/* Lock cycles per second of `waiters` acquirers cycling acquire/release
 * for `seconds` on one mutex (hand-offs), or each on its own (`spread`).
 * Returns 0, or -1 on a failure. */
int bench_async_handoff(const char *hosts, const char *path, int waiters, double seconds, int async,
                        int spread, double *per_second)
{
    zkr_client_t *c;
    if (waiters < 1 || zkr_client_open(&c, hosts, NULL) != ZKR_OK)
        return -1;
    long count = 0;
    int failed = 0;
    double t0 = now_s(), t1 = t0;
    if (async) {
        zkr_mutex_t *m;
        slot_t *s = calloc((size_t)waiters, sizeof *s);
        if (!s || zkr_mutex_new(&m, c, path) != ZKR_OK) {
            free(s);
            zkr_client_close(c);
            return -1;
        }
        for (int i = 0; spread && i < waiters; i++) {
            char own[512];
            snprintf(own, sizeof own, "%s/%d", path, i);
            if (zkr_mutex_new(&s[i].m, c, own) != ZKR_OK)
                s[i].failed = 1;
        }
        int fd = zkr_client_fd(c);
        int running = 1;
        while (running) {
            running = now_s() - t0 < seconds;
            int busy = 0;
            for (int i = 0; i < waiters; i++) {
                if (s[i].hold && !s[i].pending) {
                    zkr_hold_t *h = s[i].hold;
                    s[i].hold = NULL;
                    s[i].pending = 1;
                    if (zkr_hold_release_async(h, released, &s[i]) != ZKR_OK)
                        s[i].pending = 0, s[i].failed = 1;
                } else if (running && !s[i].pending && !s[i].failed) {
                    s[i].pending = 1;
                    s[i].started = now_s();
                    if (zkr_lock_acquire_async(zkr_mutex_ref(s[i].m ? s[i].m : m), 10000, granted, &s[i], NULL) !=
                        ZKR_OK)
                        s[i].pending = 0, s[i].failed = 1;
                }
                busy |= s[i].pending || s[i].hold;
                failed |= s[i].failed;
            }
            if (!running && !busy)
                break;
            struct pollfd p = {fd, POLLIN, 0};
            if (poll(&p, 1, 100) > 0)
                zkr_client_dispatch(c);
            running = running || busy;
        }
        t1 = now_s();
        for (int i = 0; i < waiters; i++) {
            count += s[i].released;
            zkr_mutex_free(s[i].m);
        }
        zkr_mutex_free(m);
        free(s);
    } else {
        atomic_int stop = 0;
        worker_t *w = calloc((size_t)waiters, sizeof *w);
        pthread_t *th = calloc((size_t)waiters, sizeof *th);
        int started = 0;
        for (int i = 0; w && th && i < waiters; i++) {
            w[i].stop = &stop;
            char own[512];
            snprintf(own, sizeof own, "%s/%d", path, i);
            if (zkr_mutex_new(&w[i].m, c, spread ? own : path) != ZKR_OK ||
                pthread_create(&th[i], NULL, blocking_main, &w[i]) != 0)
                break;
            started++;
        }
        while (now_s() - t0 < seconds)
            nanosleep(&(struct timespec){0, 50000000}, NULL);
        atomic_store(&stop, 1);
        for (int i = 0; i < started; i++) {
            pthread_join(th[i], NULL);
            count += w[i].count;
            failed |= w[i].failed;
        }
        t1 = now_s();
        for (int i = 0; w && i < waiters; i++)
            zkr_mutex_free(w[i].m);
        failed |= started < waiters;
        free(w);
        free(th);
    }
    zkr_client_close(c);
    *per_second = count / (t1 - t0);
    return failed ? -1 : 0;
}

int main(int argc, char **argv)
{
    const char *hosts = getenv("ZKR_HOSTS") ? getenv("ZKR_HOSTS") : "127.0.0.1:2181";
    const char *path = "/zkr-bench/async";
    int n = 8;
    double secs = 5;
    const char *mode = "both";
    int spread = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--waiters") && i + 1 < argc)
            n = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
            secs = atof(argv[++i]);
        else if (!strcmp(argv[i], "--path") && i + 1 < argc)
            path = argv[++i];
        else if (!strcmp(argv[i], "--mode") && i + 1 < argc)
            mode = argv[++i];
        else if (!strcmp(argv[i], "--spread"))
            spread = 1;
        else if (argv[i][0] != '-')
            hosts = argv[i];
        else {
            fprintf(stderr, "usage: %s [HOSTS] [--waiters N] [--seconds S] [--path P] [--mode async|blocking|both] [--spread]\n", argv[0]);
            return 2;
        }
    }
    int bad = 0;
    lat = malloc(LAT_MAX * sizeof *lat);
    for (int async = 1; async >= 0; async--) {
        if ((async && !strcmp(mode, "blocking")) || (!async && !strcmp(mode, "async")))
            continue;
        double r = 0;
        lat_n = 0;
        int rc = bench_async_handoff(hosts, path, n, secs, async, spread, &r);
        printf("%s N=%d %s/s=%.1f%s\n", async ? "async" : "blocking", n, spread ? "cycles" : "handoffs", r,
               rc ? " (failures)" : "");
        if (strcmp(mode, "both") != 0)
            printf("RESULT impl=%s scenario=%s%d threads=%d sessions=1 ops=%.0f secs=%.3f rate=%.1f "
                   "p50_ms=%.3f p99_ms=%.3f lat=cycle errors=%d\n",
                   async ? "zkr" : "zkrblock", spread ? "loop" : "async", n, async ? 1 : n, r * secs, secs, r,
                   lat_pct(0.5), lat_pct(0.99), rc != 0);
        bad |= rc != 0;
    }
    free(lat);
    return bad;
}

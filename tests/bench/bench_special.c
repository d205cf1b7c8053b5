/* zkr_bench: the two scenarios that are not a timed loop, for zkrecipes.
 *
 * waiters: N threads over S sessions queue on one mutex held by the main
 *   thread; once all N are queued the holder releases and the time until
 *   every waiter has held and released it is the drain time.  The wake-ups
 *   per release are read by the caller from the server's watch counters.
 * heap: N mutexes on N paths held at once by one thread; the growth of the
 *   malloc heap (every arena, mallinfo2) divided by N is the heap per held
 *   lock, the mutex object included. */
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <zkr/zkr.h>

#include "tests/bench/bench.h"

static zkr_client_t *open_client(const bench_cfg_t *cfg)
{
    zkr_client_t *c = bench_impl_zkr.session_open(cfg, 0);
    if (!c)
        bench_die("cannot open a zkrecipes client");
    return c;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct waiter {
    zkr_client_t *c;
    const char *path;
    double got_ms;
    int rc;
    pthread_t th;
} waiter_t;

static void *waiter_main(void *p)
{
    waiter_t *w = p;
    zkr_mutex_t *m = NULL;
    w->rc = zkr_mutex_new(&m, w->c, w->path);
    if (w->rc == ZKR_OK)
        w->rc = zkr_mutex_acquire(m, 300000);
    if (w->rc == ZKR_OK) {
        w->got_ms = bench_now_ms();
        w->rc = zkr_mutex_release(m);
    }
    zkr_mutex_free(m);
    return NULL;
}

int bench_waiters(const bench_cfg_t *cfg, int n)
{
    int ns = cfg->sessions;
    zkr_client_t **cs = calloc((size_t)ns, sizeof *cs);
    waiter_t *w = calloc((size_t)n, sizeof *w);
    if (!cs || !w)
        bench_die("out of memory");
    for (int i = 0; i < ns; i++)
        cs[i] = open_client(cfg);
    char *path = bench_lock_path(cfg, 0, -1);
    zkr_mutex_t *holder;
    if (zkr_mutex_new(&holder, cs[0], path) != ZKR_OK || zkr_mutex_acquire(holder, 60000) != ZKR_OK)
        bench_die("waiters: the holder cannot acquire");
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    double q0 = bench_now_ms();
    for (int i = 0; i < n; i++) {
        w[i].c = cs[i % ns];
        w[i].path = path;
        if (pthread_create(&w[i].th, &attr, waiter_main, &w[i]) != 0)
            bench_die("pthread_create failed at %d", i);
    }
    pthread_attr_destroy(&attr);
    /* every waiter queued: n + 1 participants (bounded: 300 s) */
    size_t count = 0;
    while (bench_now_ms() - q0 < 300000) {
        char **paths = NULL;
        if (zkr_mutex_participants(holder, &paths, &count) == ZKR_OK)
            zkr_strings_free(paths, count);
        if (count >= (size_t)n + 1)
            break;
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (count < (size_t)n + 1)
        bench_die("waiters: only %zu of %d queued", count, n + 1);
    double queued = bench_now_ms() - q0;
    printf("QUEUED %d\n", n);
    fflush(stdout);
    double t0 = bench_now_ms();
    zkr_mutex_release(holder);
    int errors = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(w[i].th, NULL);
        errors += w[i].rc != ZKR_OK;
    }
    double drain = bench_now_ms() - t0;
    double *got = calloc((size_t)n + 1, sizeof *got);
    if (!got)
        bench_die("out of memory");
    got[0] = t0;
    for (int i = 0; i < n; i++)
        got[i + 1] = w[i].got_ms;
    qsort(got, (size_t)n + 1, sizeof *got, cmp_double);
    for (int i = 0; i < n; i++)
        got[i] = got[i + 1] - got[i]; /* hand-off gaps */
    qsort(got, (size_t)n, sizeof *got, cmp_double);
    printf("RESULT impl=zkr scenario=waiters threads=%d sessions=%d ops=%d secs=%.3f rate=%.1f "
           "p50_ms=%.3f p99_ms=%.3f lat=handoff errors=%d queue_ms=%.0f\n",
           n, ns, n, drain / 1e3, n / (drain / 1e3), got[(n - 1) / 2], got[(size_t)((n - 1) * 0.99)], errors,
           queued);
    fflush(stdout);
    free(got);
    zkr_mutex_free(holder);
    free(path);
    for (int i = 0; i < ns; i++)
        zkr_client_close(cs[i]);
    free(cs);
    free(w);
    return errors ? 1 : 0;
}

int bench_heap(const bench_cfg_t *cfg, int n)
{
    zkr_client_t *c = open_client(cfg);
    zkr_mutex_t **m = calloc((size_t)n, sizeof *m);
    if (!m)
        bench_die("out of memory");
    char buf[512];
    /* warm: the client's first requests and parent creation are not counted */
    snprintf(buf, sizeof buf, "%s/warm", cfg->base);
    zkr_mutex_t *warm;
    if (zkr_mutex_new(&warm, c, buf) != ZKR_OK || zkr_mutex_acquire(warm, 60000) != ZKR_OK)
        bench_die("heap: warm-up acquire failed");
    zkr_mutex_release(warm);
    zkr_mutex_free(warm);
    struct mallinfo2 before = mallinfo2();
    double t0 = bench_now_ms();
    for (int i = 0; i < n; i++) {
        snprintf(buf, sizeof buf, "%s/h%d", cfg->base, i);
        if (zkr_mutex_new(&m[i], c, buf) != ZKR_OK || zkr_mutex_acquire(m[i], 60000) != ZKR_OK)
            bench_die("heap: acquire %d failed", i);
    }
    double secs = (bench_now_ms() - t0) / 1e3;
    struct mallinfo2 held = mallinfo2();
    for (int i = 0; i < n; i++) {
        zkr_mutex_release(m[i]);
        zkr_mutex_free(m[i]);
    }
    struct mallinfo2 after = mallinfo2();
    double per = ((double)held.uordblks - (double)before.uordblks) / n;
    double left = ((double)after.uordblks - (double)before.uordblks);
    printf("RESULT impl=zkr scenario=heap threads=1 sessions=1 ops=%d secs=%.3f rate=%.1f p50_ms=0 p99_ms=0 "
           "lat=none errors=0 bytes_per_lock=%.0f bytes_left_after_free=%.0f\n",
           n, secs, n / secs, per, left);
    fflush(stdout);
    free(m);
    zkr_client_close(c);
    return 0;
}

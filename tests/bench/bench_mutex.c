/* bench_mutex: what a lock cycle costs, in milliseconds and in requests.
 *
 *   bench_mutex HOSTS [CYCLES] [RUNS]
 *
 * Prints, for the median of RUNS runs of CYCLES cycles each:
 *   - uncontended acquire+release of one mutex by one thread;
 *   - contended hand-off: two clients, each cycle passes the lock from one
 *     to the other (the waiter's wake-up is on the path).
 * Benchmarks print figures; they never assert a speed. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <zkr/zkr.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static zkr_client_t *open_client(const char *hosts)
{
    zkr_client_options_t o;
    zkr_client_options_init(&o);
    o.zk_log_level = 0;
    zkr_client_t *c = NULL;
    int rc = zkr_client_open(&c, hosts, &o);
    if (rc != ZKR_OK) {
        fprintf(stderr, "bench_mutex: open %s: %s\n", hosts, zkr_strerror(rc));
        exit(2);
    }
    return c;
}

static double uncontended(zkr_client_t *c, int cycles)
{
    zkr_mutex_t *m;
    zkr_mutex_new(&m, c, "/zkr-bench/uncontended");
    zkr_mutex_acquire(m, 10000); /* parents exist from here on */
    zkr_mutex_release(m);
    double t0 = now_ms();
    for (int i = 0; i < cycles; i++) {
        if (zkr_mutex_acquire(m, 10000) != ZKR_OK || zkr_mutex_release(m) != ZKR_OK) {
            fprintf(stderr, "bench_mutex: cycle failed\n");
            exit(1);
        }
    }
    double per = (now_ms() - t0) / cycles;
    zkr_mutex_free(m);
    return per;
}

typedef struct side {
    zkr_client_t *c;
    int cycles;
    atomic_int *turn;
    int me;
} side_t;

static void *handoff_side(void *p)
{
    side_t *s = p;
    zkr_mutex_t *m;
    zkr_mutex_new(&m, s->c, "/zkr-bench/handoff");
    for (int i = 0; i < s->cycles; i++) {
        if (zkr_mutex_acquire(m, 30000) != ZKR_OK)
            exit(1);
        /* Two clients compete: most releases hand the lock to the other
         * side, which is queued and woken by its data watch. */
        atomic_store(s->turn, s->me);
        zkr_mutex_release(m);
    }
    zkr_mutex_free(m);
    return NULL;
}

static double handoff(zkr_client_t *a, zkr_client_t *b, int cycles)
{
    atomic_int turn = 0;
    side_t sa = {a, cycles, &turn, 1}, sb = {b, cycles, &turn, 2};
    pthread_t ta, tb;
    double t0 = now_ms();
    pthread_create(&ta, NULL, handoff_side, &sa);
    pthread_create(&tb, NULL, handoff_side, &sb);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    return (now_ms() - t0) / (2.0 * cycles);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_mutex HOSTS [CYCLES] [RUNS]\n");
        return 2;
    }
    int cycles = argc > 2 ? atoi(argv[2]) : 500;
    int runs = argc > 3 ? atoi(argv[3]) : 5;
    if (cycles < 1 || runs < 1 || runs > 99)
        return 2;
    zkr_client_t *a = open_client(argv[1]);
    zkr_client_t *b = open_client(argv[1]);
    double u[99], h[99];
    for (int r = 0; r < runs; r++) {
        u[r] = uncontended(a, cycles);
        h[r] = handoff(a, b, cycles);
    }
    qsort(u, (size_t)runs, sizeof *u, cmp_double);
    qsort(h, (size_t)runs, sizeof *h, cmp_double);
    printf("zkrecipes uncontended acquire+release: median %.3f ms/cycle (%d runs x %d cycles)\n", u[runs / 2], runs,
           cycles);
    printf("zkrecipes contended hand-off:          median %.3f ms/acquire (%d runs x %d cycles x 2 clients)\n",
           h[runs / 2], runs, cycles);
    zkr_client_close(a);
    zkr_client_close(b);
    return 0;
}

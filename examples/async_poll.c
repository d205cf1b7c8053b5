/* async_poll: one thread, one poll(2) loop, many concurrent "requests",
 * each taking a distributed lock without blocking the loop.
 *
 *   async_poll [HOSTS] [--requests N] [--locks K] [--path /zkr-demo/async]
 *
 * HOSTS defaults to $ZKR_HOSTS, then 127.0.0.1:2181.  Request i needs lock
 * <path>/lock-(i mod K); it starts an asynchronous acquire, "works" 5 ms
 * once granted (a timer of the same loop), then releases.  The loop waits
 * on the client's fd (completions ready) and on the earliest work timer.
 * Prints "CHECK PASSED" if every request was served and no lock ever had
 * two holders in this process. */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <zkr/zkr.h>

typedef struct request {
    int id;
    int lock;              /* which lock it needs */
    zkr_hold_t *hold;      /* while it works */
    long long work_until;  /* ms, while it works */
    int done;
} request_t;

static int *holders; /* per lock: requests inside it now */
static int overlaps, served, failed;

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The completion: runs inside zkr_client_dispatch, on the loop's thread. */
static void granted(uint64_t acquire_id, int rc, zkr_hold_t *hold, void *ctx)
{
    (void)acquire_id;
    request_t *r = ctx;
    if (rc != ZKR_OK) {
        fprintf(stderr, "request %d: %s\n", r->id, zkr_strerror(rc));
        failed++;
        r->done = 1;
        return;
    }
    if (holders[r->lock]++ != 0)
        overlaps++;
    r->hold = hold;
    r->work_until = now_ms() + 5;
}

static void released(int rc, void *ctx)
{
    request_t *r = ctx;
    if (rc == ZKR_OK) {
        served++;
    } else {
        fprintf(stderr, "request %d: release: %s\n", r->id, zkr_strerror(rc));
        failed++;
    }
}

int main(int argc, char **argv)
{
    const char *hosts = getenv("ZKR_HOSTS") ? getenv("ZKR_HOSTS") : "127.0.0.1:2181";
    const char *path = "/zkr-demo/async";
    int n = 200, k = 4;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--requests") && i + 1 < argc)
            n = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--locks") && i + 1 < argc)
            k = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--path") && i + 1 < argc)
            path = argv[++i];
        else if (argv[i][0] != '-')
            hosts = argv[i];
        else {
            fprintf(stderr, "usage: %s [HOSTS] [--requests N] [--locks K] [--path P]\n", argv[0]);
            return 2;
        }
    }
    if (n < 1 || k < 1)
        return 2;
    zkr_client_t *c;
    int rc = zkr_client_open(&c, hosts, NULL);
    if (rc != ZKR_OK) {
        fprintf(stderr, "cannot connect to %s: %s\n", hosts, zkr_strerror(rc));
        return 1;
    }
    zkr_mutex_t **locks = calloc((size_t)k, sizeof *locks);
    request_t *req = calloc((size_t)n, sizeof *req);
    holders = calloc((size_t)k, sizeof *holders);
    if (!locks || !req || !holders)
        return 1;
    for (int i = 0; i < k; i++) {
        char p[512];
        snprintf(p, sizeof p, "%s/lock-%d", path, i);
        if (zkr_mutex_new(&locks[i], c, p) != ZKR_OK)
            return 1;
    }
    for (int i = 0; i < n; i++) {
        req[i].id = i;
        req[i].lock = i % k;
        if (zkr_lock_acquire_async(zkr_mutex_ref(locks[req[i].lock]), 30000, granted, &req[i], NULL) != ZKR_OK)
            return 1;
    }
    int fd = zkr_client_fd(c);
    long long end = now_ms() + 120000;
    while (served + failed < n && now_ms() < end) {
        long long next = now_ms() + 1000;
        for (int i = 0; i < n; i++)
            if (req[i].hold && req[i].work_until < next)
                next = req[i].work_until;
        long long wait = next - now_ms();
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, wait > 0 ? (int)wait : 0) > 0)
            zkr_client_dispatch(c);
        for (int i = 0; i < n; i++) {
            if (req[i].hold && now_ms() >= req[i].work_until) {
                holders[req[i].lock]--;
                /* never waits: served once the delete is answered */
                if (zkr_hold_release_async(req[i].hold, released, &req[i]) != ZKR_OK)
                    failed++;
                req[i].hold = NULL;
                req[i].done = 1;
            }
        }
    }
    for (int i = 0; i < k; i++)
        zkr_mutex_free(locks[i]);
    zkr_client_close(c);
    int ok = served == n && overlaps == 0;
    printf("%s: %d requests served, %d failed, %d overlaps, on %d locks, one thread\n",
           ok ? "CHECK PASSED" : "CHECK FAILED", served, failed, overlaps, k);
    free(locks);
    free(req);
    free(holders);
    return ok ? 0 : 1;
}

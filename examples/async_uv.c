/* async_uv: the same as async_poll on a libuv loop: the client's fd is a
 * uv_poll_t whose callback calls zkr_client_dispatch; each request's work
 * is a uv_timer_t.
 *
 *   async_uv [HOSTS] [--requests N] [--locks K] [--path /zkr-demo/async-uv]
 *
 * Prints "CHECK PASSED" if every request was served and no lock ever had
 * two holders in this process.  Built when libuv (libuv1-dev) is found. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>
#include <zkr/zkr.h>

typedef struct request {
    uv_timer_t work;   /* first: the handle's address is the request's */
    int id;
    int lock;
    zkr_hold_t *hold;
} request_t;

static zkr_client_t *client;
static uv_poll_t zk_poll;
static int *holders;
static int n_requests, overlaps, served, failed;

static void finish_one(void)
{
    if (served + failed == n_requests)
        uv_poll_stop(&zk_poll); /* nothing else keeps the loop alive */
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
    finish_one();
}

static void work_done(uv_timer_t *t)
{
    request_t *r = (request_t *)t;
    holders[r->lock]--;
    /* never waits on the network: the answer comes through the loop */
    if (zkr_hold_release_async(r->hold, released, r) != ZKR_OK) {
        failed++;
        finish_one();
    }
    r->hold = NULL;
    uv_close((uv_handle_t *)t, NULL);
}

static void granted(uint64_t acquire_id, int rc, zkr_hold_t *hold, void *ctx)
{
    (void)acquire_id;
    request_t *r = ctx;
    if (rc != ZKR_OK) {
        fprintf(stderr, "request %d: %s\n", r->id, zkr_strerror(rc));
        failed++;
        uv_close((uv_handle_t *)&r->work, NULL);
        finish_one();
        return;
    }
    if (holders[r->lock]++ != 0)
        overlaps++;
    r->hold = hold;
    uv_timer_start(&r->work, work_done, 5, 0);
}

static void zk_readable(uv_poll_t *p, int status, int events)
{
    (void)p;
    (void)status;
    (void)events;
    zkr_client_dispatch(client); /* the completions run here, on the loop */
}

int main(int argc, char **argv)
{
    const char *hosts = getenv("ZKR_HOSTS") ? getenv("ZKR_HOSTS") : "127.0.0.1:2181";
    const char *path = "/zkr-demo/async-uv";
    int k = 4;
    n_requests = 200;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--requests") && i + 1 < argc)
            n_requests = atoi(argv[++i]);
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
    if (n_requests < 1 || k < 1)
        return 2;
    int rc = zkr_client_open(&client, hosts, NULL);
    if (rc != ZKR_OK) {
        fprintf(stderr, "cannot connect to %s: %s\n", hosts, zkr_strerror(rc));
        return 1;
    }
    uv_loop_t *loop = uv_default_loop();
    zkr_mutex_t **locks = calloc((size_t)k, sizeof *locks);
    request_t *req = calloc((size_t)n_requests, sizeof *req);
    holders = calloc((size_t)k, sizeof *holders);
    if (!locks || !req || !holders)
        return 1;
    for (int i = 0; i < k; i++) {
        char p[512];
        snprintf(p, sizeof p, "%s/lock-%d", path, i);
        if (zkr_mutex_new(&locks[i], client, p) != ZKR_OK)
            return 1;
    }
    uv_poll_init(loop, &zk_poll, zkr_client_fd(client));
    uv_poll_start(&zk_poll, UV_READABLE, zk_readable);
    for (int i = 0; i < n_requests; i++) {
        req[i].id = i;
        req[i].lock = i % k;
        uv_timer_init(loop, &req[i].work);
        if (zkr_lock_acquire_async(zkr_mutex_ref(locks[req[i].lock]), 30000, granted, &req[i], NULL) != ZKR_OK)
            return 1;
    }
    uv_run(loop, UV_RUN_DEFAULT);
    uv_close((uv_handle_t *)&zk_poll, NULL);
    uv_run(loop, UV_RUN_DEFAULT);
    for (int i = 0; i < k; i++)
        zkr_mutex_free(locks[i]);
    zkr_client_close(client);
    uv_loop_close(loop);
    int ok = served == n_requests && overlaps == 0;
    printf("%s: %d requests served, %d failed, %d overlaps, on %d locks, one libuv loop\n",
           ok ? "CHECK PASSED" : "CHECK FAILED", served, failed, overlaps, k);
    free(locks);
    free(req);
    free(holders);
    return ok ? 0 : 1;
}

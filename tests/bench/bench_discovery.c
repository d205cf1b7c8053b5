/* zkr_bench: service discovery (include/zkr/discovery.h), the same shapes
 * as CuratorBench.java's runDiscovery (Curator's ServiceDiscovery with its
 * default JsonInstanceSerializer), so that both are measured alike.
 *
 * disctree: -N instances (default 100) of service "svc" under -b BASE
 *   (default /zkr-bench/disc100), persistent, made if missing (not timed;
 *   made once by the harness and shared by every implementation).
 * register: one discovery on one session; each operation registers a new
 *   DYNAMIC instance (a fresh id, an address, a port, a small Map payload)
 *   and is timed until the server confirmed the node, then unregisters it
 *   (not timed); for the run's seconds.  p50 / p99 of the registrations.
 * query100: queries of the -N instances of disctree's service (the
 *   children, then each one's data, parsed), for the run's seconds; p50 /
 *   p99 of one query. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zookeeper/zookeeper.h>
#include <zkr/zkr.h>

#include "tests/bench/bench.h"

#define WAIT_MS 30000
#define MAX_OPS 200000

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void print_result(const bench_cfg_t *cfg, double *ms, long n, double secs, int errors, size_t listed)
{
    qsort(ms, (size_t)n, sizeof *ms, cmp_double);
    printf("RESULT impl=%s scenario=%s threads=1 sessions=1 ops=%ld secs=%.3f rate=%.1f p50_ms=%.3f p99_ms=%.3f "
           "lat=cycle errors=%d listed=%zu\n",
           cfg->impl, cfg->scenario, n, secs, n / (secs > 0 ? secs : 1), n ? ms[(n - 1) / 2] : 0,
           n ? ms[(long)((n - 1) * 0.99)] : 0, errors, listed);
}

static zkr_client_t *open_client(const bench_cfg_t *cfg)
{
    zkr_client_options_t opt;
    zkr_client_options_init(&opt);
    opt.zk_log_level = 0;
    zkr_client_t *c = NULL;
    if (zkr_client_open(&c, cfg->hosts, &opt) != ZKR_OK || zkr_client_wait_connected(c, WAIT_MS) != ZKR_OK)
        bench_die("no connection to %s", cfg->hosts);
    return c;
}

static void fill(zkr_instance_t *in, const char *id, int port)
{
    if (zkr_instance_init(in) != ZKR_OK)
        bench_die("zkr_instance_init");
    in->name = "svc";
    if (id)
        in->id = id;
    in->address = "10.0.0.1";
    in->port = port;
    in->payload = "{\"zone\":\"eu-1\",\"weight\":\"3\"}";
}

/* The instances of disctree, made with the raw client's persistent nodes. */
static int make_tree(const bench_cfg_t *cfg, int n)
{
    zhandle_t *zh = zookeeper_init(cfg->hosts, NULL, 10000, NULL, NULL, 0);
    for (int i = 0; zh && zoo_state(zh) != ZOO_CONNECTED_STATE && i < 400; i++)
        usleep(25000);
    if (!zh || zoo_state(zh) != ZOO_CONNECTED_STATE)
        bench_die("no connection to %s", cfg->hosts);
    char path[512];
    const char *parts[] = {"/zkr-bench", cfg->base};
    for (int i = 0; i < 2; i++)
        zoo_create(zh, parts[i], NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    snprintf(path, sizeof path, "%s/svc", cfg->base);
    zoo_create(zh, path, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    int made = 0;
    for (int i = 0; i < n; i++) {
        char id[32];
        snprintf(id, sizeof id, "i%05d", i);
        zkr_instance_t in;
        fill(&in, id, 10000 + i);
        in.service_type = ZKR_SERVICE_STATIC;
        char *json = NULL;
        size_t len = 0;
        if (zkr_instance_to_json(&in, &json, &len) != ZKR_OK)
            bench_die("zkr_instance_to_json");
        snprintf(path, sizeof path, "%s/svc/%s", cfg->base, id);
        int zrc = zoo_create(zh, path, json, (int)len, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
        zkr_free(json);
        if (zrc != ZOK && zrc != ZNODEEXISTS)
            bench_die("create %s: %s", path, zerror(zrc));
        made += zrc == ZOK;
    }
    zookeeper_close(zh);
    fprintf(stderr, "disctree: %d instances under %s/svc (%d made)\n", n, cfg->base, made);
    return 0;
}

static int run_register(const bench_cfg_t *cfg)
{
    zkr_client_t *c = open_client(cfg);
    char base[256];
    snprintf(base, sizeof base, "/zkr-bench/register-%s-%ld", cfg->impl, (long)getpid());
    zkr_discovery_t *d = NULL;
    if (zkr_discovery_new(&d, c, base) != ZKR_OK)
        bench_die("zkr_discovery_new");
    double *ms = malloc(MAX_OPS * sizeof *ms);
    if (!ms)
        bench_die("no memory");
    long n = 0;
    int errors = 0;
    double t0 = bench_now_ms(), end = t0 + cfg->seconds * 1e3;
    while (n < MAX_OPS && (n == 0 || bench_now_ms() < end)) {
        zkr_instance_t in;
        fill(&in, NULL, 8080);
        double a = bench_now_ms();
        int rc = zkr_discovery_register(d, &in, WAIT_MS);
        double b = bench_now_ms();
        if (rc != ZKR_OK) {
            if (++errors > 10)
                bench_die("register: %s", zkr_strerror(rc));
            continue;
        }
        ms[n++] = b - a;
        zkr_discovery_unregister(d, in.name, in.id);
    }
    double secs = (bench_now_ms() - t0) / 1e3;
    zkr_discovery_free(d);
    zkr_client_close(c);
    print_result(cfg, ms, n, secs, errors, 0);
    free(ms);
    return errors ? 1 : 0;
}

static int run_query(const bench_cfg_t *cfg, int want)
{
    zkr_client_t *c = open_client(cfg);
    zkr_discovery_t *d = NULL;
    if (zkr_discovery_new(&d, c, cfg->base) != ZKR_OK)
        bench_die("zkr_discovery_new %s", cfg->base);
    double *ms = malloc(MAX_OPS * sizeof *ms);
    if (!ms)
        bench_die("no memory");
    long n = 0;
    int errors = 0;
    size_t listed = 0;
    double t0 = bench_now_ms(), end = t0 + cfg->seconds * 1e3;
    while (n < MAX_OPS && (n == 0 || bench_now_ms() < end)) {
        zkr_instance_t **v = NULL;
        size_t count = 0;
        double a = bench_now_ms();
        int rc = zkr_discovery_instances(d, "svc", &v, &count, WAIT_MS);
        double b = bench_now_ms();
        zkr_instances_free(v, count);
        if (rc != ZKR_OK || count != (size_t)want) {
            if (++errors > 10)
                bench_die("query: %s, %zu instances (want %d: zkr_bench -c disctree)", zkr_strerror(rc), count, want);
            continue;
        }
        listed = count;
        ms[n++] = b - a;
    }
    double secs = (bench_now_ms() - t0) / 1e3;
    zkr_discovery_free(d);
    zkr_client_close(c);
    print_result(cfg, ms, n, secs, errors, listed);
    free(ms);
    return errors ? 1 : 0;
}

int bench_discovery(const bench_cfg_t *cfg, int count)
{
    if (strcmp(cfg->impl, "zkr") != 0)
        bench_die("%s: zkr only", cfg->scenario);
    if (strcmp(cfg->scenario, "disctree") == 0)
        return make_tree(cfg, count ? count : 100);
    if (strcmp(cfg->scenario, "register") == 0)
        return run_register(cfg);
    return run_query(cfg, count ? count : 100);
}

/* zkr_bench: the cache (include/zkr/cache.h), the same shapes as
 * CuratorBench.java's runCache* (Curator's TreeCache and CuratorCache), so
 * that both are measured alike.  The trees are made once by the harness
 * (cachetree), not timed, and shared by every implementation: a base node,
 * 100 children c000..c099, and N/100 grandchildren g0000.. under each, data
 * "data-<n>" (10 bytes).  Requests are the server's mntr packets_received
 * deltas read by the scenario itself around what it measures, less its
 * own four-letter words in between (the server counts each as a packet).
 *
 * cachetree: -N nodes (default 10000) under -b BASE, made if missing.
 * cacheload10k: a tree cache of the 10,000-node tree (10,101 cached nodes
 *   with the base and the children) on a fresh session, from start to
 *   INITIALIZED told to the listener; repeated for the run's seconds
 *   (at least once), each load on its own session; p50 / p99 of the loads,
 *   requests per cached node.
 * cachelatency: a tree cache of a 1,000-node tree; a writer (a raw C
 *   client, its own session) sets the data of a random leaf, one at a
 *   time: from before the set until the listener is told CHANGED with that
 *   data, -N changes (default 2000); requests per change.
 * cachewatches: the server's watches per cached node of the 10,000-node
 *   tree, read before start and after INITIALIZED: data watches (wchs)
 *   and all watches (mntr zk_watch_count).  -i zkrnodata: opt.data 0.
 * cacheresync: the 10,000-node tree cached through a proxy (-P, the
 *   `proxy` mode below, shared with the Java peer): the proxy stalls and
 *   cuts the connection, K = 10 random leaves are changed (a direct
 *   session), the proxy lets bytes move again: time until the cache holds
 *   the K new data, until the client is reconnected (same session), and
 *   the requests the server received from then until it is quiet (no
 *   more than 2 requests in 300 ms: other idle sessions' pings).
 * proxy: the test harness's TCP proxy (tests/harness/zkproxy.h) in front
 *   of -z's first server; prints "PROXY 127.0.0.1:<port> <control port>"
 *   and serves control lines on the control port ("stall 1", "stall 0",
 *   "cut", "conns"; each answered "OK [n]") until stdin closes. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <zookeeper/zookeeper.h>
#include <zkr/zkr.h>

#include "tests/bench/bench.h"
#include "tests/harness/zkproxy.h"

#define KIDS 100      /* children of the base */
#define RESYNC_K 10   /* nodes changed while disconnected */
#define WAIT_MS 60000 /* any single wait */

/* ---- four-letter words ---------------------------------------------------------- */

/* Connect to host:port (the first of a connection string). */
static int tcp_connect(const char *hostport)
{
    char host[256];
    snprintf(host, sizeof host, "%s", hostport);
    char *comma = strchr(host, ',');
    if (comma)
        *comma = '\0';
    char *colon = strrchr(host, ':');
    if (!colon)
        return -1;
    *colon = '\0';
    struct addrinfo hints, *ai = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, colon + 1, &hints, &ai) != 0 || !ai)
        return -1;
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        close(fd);
        fd = -1;
    }
    freeaddrinfo(ai);
    return fd;
}

/* The server's answer to `word` (malloc'd, NUL-terminated; NULL). */
static char *four(const char *hosts, const char *word)
{
    int fd = tcp_connect(hosts);
    if (fd < 0)
        return NULL;
    size_t n = 0, cap = 65536;
    char *buf = malloc(cap + 1);
    if (!buf || send(fd, word, strlen(word), MSG_NOSIGNAL) != (ssize_t)strlen(word)) {
        free(buf);
        close(fd);
        return NULL;
    }
    for (;;) {
        if (n == cap) {
            char *b = realloc(buf, cap * 2 + 1);
            if (!b)
                break;
            buf = b;
            cap *= 2;
        }
        ssize_t r = recv(fd, buf + n, cap - n, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = '\0';
    return buf;
}

/* A value of mntr ("key\tvalue" lines); -1 if missing. */
static double mntr(const char *hosts, const char *key)
{
    char *s = four(hosts, "mntr");
    if (!s)
        bench_die("mntr: no answer from %s", hosts);
    double v = -1;
    size_t kl = strlen(key);
    for (char *ln = s; ln && *ln; ln = strchr(ln, '\n') ? strchr(ln, '\n') + 1 : NULL)
        if (strncmp(ln, key, kl) == 0 && ln[kl] == '\t') {
            v = atof(ln + kl + 1);
            break;
        }
    free(s);
    return v;
}

static double packets(const char *hosts)
{
    return mntr(hosts, "zk_packets_received");
}

/* wchs: "Total watches:N" (data watches on ZooKeeper 3.8). */
static double wchs_total(const char *hosts)
{
    char *s = four(hosts, "wchs");
    if (!s)
        bench_die("wchs: no answer from %s", hosts);
    char *t = strstr(s, "Total watches:");
    double v = t ? atof(t + strlen("Total watches:")) : -1;
    free(s);
    return v;
}

/* ---- the trees ----------------------------------------------------------------------- */

static zhandle_t *raw_open(const bench_cfg_t *cfg)
{
    zhandle_t *zh = bench_impl_floor.session_open(cfg, 0);
    if (!zh)
        bench_die("cannot open a plain ZooKeeper handle");
    return zh;
}

typedef struct pending {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    long out, failed;
} pending_t;

static void created(int rc, const char *value, const void *data)
{
    (void)value;
    pending_t *p = (pending_t *)data;
    pthread_mutex_lock(&p->mu);
    if (rc != ZOK && rc != ZNODEEXISTS)
        p->failed++;
    p->out--;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

static void create_async(zhandle_t *zh, pending_t *p, const char *path, const char *data)
{
    pthread_mutex_lock(&p->mu);
    while (p->out >= 2000)
        pthread_cond_wait(&p->cv, &p->mu);
    p->out++;
    pthread_mutex_unlock(&p->mu);
    int rc = zoo_acreate(zh, path, data, (int)strlen(data), &ZOO_OPEN_ACL_UNSAFE, 0, created, p);
    if (rc != ZOK)
        created(rc, NULL, p);
}

static void drain(pending_t *p)
{
    pthread_mutex_lock(&p->mu);
    while (p->out > 0)
        pthread_cond_wait(&p->cv, &p->mu);
    pthread_mutex_unlock(&p->mu);
    if (p->failed)
        bench_die("cachetree: %ld creates failed", p->failed);
}

static char *leaf_path(const char *base, int n, int i)
{
    int per = n / KIDS;
    char buf[512];
    snprintf(buf, sizeof buf, "%s/c%03d/g%04d", base, i / per, i % per);
    char *s = strdup(buf);
    if (!s)
        bench_die("out of memory");
    return s;
}

/* The tree of n leaves (n a multiple of 100) under base, made unless the
 * base's data says it is complete. */
static void ensure_tree(zhandle_t *zh, const char *base, int n)
{
    char marker[64], got[64];
    snprintf(marker, sizeof marker, "tree n=%d", n);
    int len = (int)sizeof got - 1;
    if (zoo_get(zh, base, 0, got, &len, NULL) == ZOK && len >= 0) {
        got[len] = '\0';
        if (strcmp(got, marker) == 0)
            return;
    }
    if (n < KIDS || n % KIDS)
        bench_die("cachetree: %d nodes: a multiple of %d", n, KIDS);
    double t0 = bench_now_ms();
    char buf[512];
    snprintf(buf, sizeof buf, "%s", base);
    for (char *s = buf + 1; (s = strchr(s, '/')); s++) { /* the parents */
        *s = '\0';
        zoo_create(zh, buf, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
        *s = '/';
    }
    int rc = zoo_create(zh, base, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    if (rc != ZOK && rc != ZNODEEXISTS)
        bench_die("cachetree: create %s: %s", base, zerror(rc));
    pending_t p = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
    char data[32];
    for (int i = 0; i < KIDS; i++) {
        snprintf(buf, sizeof buf, "%s/c%03d", base, i);
        snprintf(data, sizeof data, "data-%05d", i);
        create_async(zh, &p, buf, data);
    }
    drain(&p);
    for (int i = 0; i < n; i++) {
        char *leaf = leaf_path(base, n, i);
        snprintf(data, sizeof data, "data-%05d", i);
        create_async(zh, &p, leaf, data);
        free(leaf);
    }
    drain(&p);
    if ((rc = zoo_set(zh, base, marker, (int)strlen(marker), -1)) != ZOK)
        bench_die("cachetree: set %s: %s", base, zerror(rc));
    fprintf(stderr, "zkr_bench: cachetree: %s, %d leaves, made in %.0f ms\n", base, n, bench_now_ms() - t0);
}

/* ---- the cache and what its listener is told ------------------------------------------ */

typedef struct told {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int initialized;
    double init_ms;
    long events;
    char want_path[512], want_data[64]; /* a CHANGED awaited */
    int got;
    double got_ms;
    int suspended, reconnected;
    double reconnected_ms;
} told_t;

static void told_init(told_t *t)
{
    memset(t, 0, sizeof *t);
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);
}

static void told_fini(told_t *t)
{
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cv);
}

static void on_cache(zkr_cache_t *cache, const zkr_cache_event_t *ev, void *ctx)
{
    (void)cache;
    told_t *t = ctx;
    double now = bench_now_ms();
    pthread_mutex_lock(&t->mu);
    t->events++;
    if (ev->type == ZKR_CACHE_INITIALIZED && !t->initialized) {
        t->initialized = 1;
        t->init_ms = now;
        pthread_cond_broadcast(&t->cv);
    } else if (ev->type == ZKR_CACHE_CHANGED && t->want_path[0] && !t->got &&
               strcmp(ev->node->path, t->want_path) == 0 && ev->node->data &&
               strcmp(ev->node->data, t->want_data) == 0) {
        t->got = 1;
        t->got_ms = now;
        pthread_cond_broadcast(&t->cv);
    }
    pthread_mutex_unlock(&t->mu);
}

static void on_state(zkr_client_t *c, zkr_state_t state, void *ctx)
{
    (void)c;
    told_t *t = ctx;
    double now = bench_now_ms();
    pthread_mutex_lock(&t->mu);
    if (state == ZKR_STATE_SUSPENDED)
        t->suspended = 1;
    if (state == ZKR_STATE_RECONNECTED && t->suspended && !t->reconnected) {
        t->reconnected = 1;
        t->reconnected_ms = now;
    }
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

/* Wait (t->mu held) until *flag, at most ms; 0 on time-out. */
static int wait_flag(told_t *t, const int *flag, int ms)
{
    double end = bench_now_ms() + ms;
    while (!*flag) {
        double left = end - bench_now_ms();
        if (left <= 0)
            return 0;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        long add = (long)(left < 50 ? left : 50) * 1000000L;
        ts.tv_nsec += add;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&t->cv, &t->mu, &ts);
    }
    return 1;
}

static zkr_client_t *client_at(const bench_cfg_t *cfg, const char *hosts)
{
    bench_cfg_t c2 = *cfg;
    c2.hosts = hosts;
    zkr_client_t *c = bench_impl_zkr.session_open(&c2, 0);
    if (!c)
        bench_die("cannot open a zkrecipes client on %s", hosts);
    return c;
}

/* A started tree cache of base on c, told to t. */
static zkr_cache_t *cache_start(zkr_client_t *c, const char *base, int data, told_t *t)
{
    zkr_cache_options_t opt;
    zkr_cache_options_init(&opt);
    opt.shape = ZKR_CACHE_TREE;
    opt.data = data;
    zkr_cache_t *k = NULL;
    int rc = zkr_cache_new(&k, c, base, &opt);
    if (rc == ZKR_OK)
        rc = zkr_cache_set_listener(k, on_cache, t);
    if (rc == ZKR_OK)
        rc = zkr_cache_start(k);
    if (rc != ZKR_OK)
        bench_die("cache %s: %s", base, zkr_strerror(rc));
    return k;
}

static void wait_initialized(told_t *t)
{
    pthread_mutex_lock(&t->mu);
    int ok = wait_flag(t, &t->initialized, WAIT_MS);
    pthread_mutex_unlock(&t->mu);
    if (!ok)
        bench_die("the cache was not initialized within %d s", WAIT_MS / 1000);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double pct(double *v, size_t n, double q)
{
    if (!n)
        return 0;
    qsort(v, n, sizeof *v, cmp_double);
    return v[(size_t)((double)(n - 1) * q)];
}

static unsigned next_rand(unsigned *seed)
{
    *seed = *seed * 1103515245u + 12345u;
    return (*seed >> 8) & 0xffffff;
}

/* ---- the scenarios ------------------------------------------------------------------------ */

static const char *impl_label(int data)
{
    return data ? "zkr" : "zkrnodata";
}

static int bench_load(const bench_cfg_t *cfg, int data)
{
    const char *base = "/zkr-bench/cache10k";
    zhandle_t *zh = raw_open(cfg);
    ensure_tree(zh, base, 10000);
    zookeeper_close(zh);
    double ms[64], req = 0;
    size_t loads = 0, nodes = 0;
    double end = bench_now_ms() + cfg->seconds * 1e3;
    while (loads < 64 && (loads == 0 || bench_now_ms() < end)) {
        zkr_client_t *c = client_at(cfg, cfg->hosts);
        told_t t;
        told_init(&t);
        double p0 = packets(cfg->hosts);
        double t0 = bench_now_ms();
        zkr_cache_t *k = cache_start(c, base, data, &t);
        wait_initialized(&t);
        double p1 = packets(cfg->hosts);
        ms[loads++] = t.init_ms - t0;
        nodes = zkr_cache_size(k);
        req += p1 - p0 - 1;
        zkr_cache_free(k);
        zkr_client_close(c);
        told_fini(&t);
    }
    double secs = 0;
    for (size_t i = 0; i < loads; i++)
        secs += ms[i] / 1e3;
    printf("RESULT impl=%s scenario=%s threads=1 sessions=1 ops=%zu secs=%.3f rate=%.1f p50_ms=%.3f "
           "p99_ms=%.3f lat=load errors=0 nodes=%zu req_per_node=%.3f\n",
           impl_label(data), cfg->scenario, loads, secs, (double)loads / secs, pct(ms, loads, 0.5),
           pct(ms, loads, 0.99), nodes, req / ((double)loads * (double)(nodes ? nodes : 1)));
    fflush(stdout);
    return 0;
}

static int bench_latency(const bench_cfg_t *cfg, int data, int count)
{
    const char *base = "/zkr-bench/cache1k";
    int n = 1000;
    zhandle_t *zh = raw_open(cfg);
    ensure_tree(zh, base, n);
    zkr_client_t *c = client_at(cfg, cfg->hosts);
    told_t t;
    told_init(&t);
    zkr_cache_t *k = cache_start(c, base, data, &t);
    wait_initialized(&t);
    double *lat = calloc((size_t)count, sizeof *lat);
    if (!lat)
        bench_die("out of memory");
    unsigned seed = (unsigned)getpid() * 2654435761u;
    int errors = 0, done = 0;
    double p0 = packets(cfg->hosts), t0 = bench_now_ms();
    for (int i = 0; i < count; i++) {
        char *path = leaf_path(base, n, (int)(next_rand(&seed) % (unsigned)n));
        pthread_mutex_lock(&t.mu);
        snprintf(t.want_path, sizeof t.want_path, "%s", path);
        snprintf(t.want_data, sizeof t.want_data, "w%d-%d", (int)getpid(), i);
        t.got = 0;
        pthread_mutex_unlock(&t.mu);
        double a0 = bench_now_ms();
        int rc = zoo_set(zh, path, t.want_data, (int)strlen(t.want_data), -1);
        pthread_mutex_lock(&t.mu);
        int ok = rc == ZOK && wait_flag(&t, &t.got, 10000);
        if (ok)
            lat[done++] = t.got_ms - a0;
        t.want_path[0] = '\0';
        pthread_mutex_unlock(&t.mu);
        free(path);
        if (!ok && ++errors > 10)
            bench_die("cachelatency: changes not told (%s)", zerror(rc));
    }
    double secs = (bench_now_ms() - t0) / 1e3, p1 = packets(cfg->hosts);
    printf("RESULT impl=%s scenario=%s threads=1 sessions=2 ops=%d secs=%.3f rate=%.1f p50_ms=%.3f "
           "p99_ms=%.3f lat=change errors=%d req_per_change=%.3f\n",
           impl_label(data), cfg->scenario, done, secs, done / secs, pct(lat, (size_t)done, 0.5),
           pct(lat, (size_t)done, 0.99), errors, (p1 - p0 - 1) / (done ? done : 1));
    fflush(stdout);
    free(lat);
    zkr_cache_free(k);
    zkr_client_close(c);
    zookeeper_close(zh);
    told_fini(&t);
    return errors ? 1 : 0;
}

static int bench_watches(const bench_cfg_t *cfg, int data)
{
    const char *base = "/zkr-bench/cache10k";
    zhandle_t *zh = raw_open(cfg);
    ensure_tree(zh, base, 10000);
    zookeeper_close(zh);
    zkr_client_t *c = client_at(cfg, cfg->hosts);
    told_t t;
    told_init(&t);
    double d0 = wchs_total(cfg->hosts), a0 = mntr(cfg->hosts, "zk_watch_count");
    double t0 = bench_now_ms();
    zkr_cache_t *k = cache_start(c, base, data, &t);
    wait_initialized(&t);
    double ms = t.init_ms - t0;
    double d1 = wchs_total(cfg->hosts), a1 = mntr(cfg->hosts, "zk_watch_count");
    size_t nodes = zkr_cache_size(k);
    double nn = (double)(nodes ? nodes : 1);
    printf("RESULT impl=%s scenario=%s threads=1 sessions=1 ops=%zu secs=%.3f rate=%.1f p50_ms=%.3f "
           "p99_ms=%.3f lat=load errors=0 nodes=%zu data_watches=%.0f all_watches=%.0f "
           "data_per_node=%.4f all_per_node=%.4f\n",
           impl_label(data), cfg->scenario, nodes, ms / 1e3, nodes / (ms / 1e3), ms, ms, nodes, d1 - d0, a1 - a0,
           (d1 - d0) / nn, (a1 - a0) / nn);
    fflush(stdout);
    zkr_cache_free(k);
    zkr_client_close(c);
    told_fini(&t);
    return 0;
}

/* The proxy's control connection: one command, its answer. */
static long ctl(int fd, const char *cmd)
{
    char line[64], ans[64];
    snprintf(line, sizeof line, "%s\n", cmd);
    if (send(fd, line, strlen(line), MSG_NOSIGNAL) != (ssize_t)strlen(line))
        bench_die("proxy control: send failed");
    size_t n = 0;
    while (n < sizeof ans - 1) {
        ssize_t r = recv(fd, ans + n, 1, 0);
        if (r <= 0)
            bench_die("proxy control: no answer to %s", cmd);
        if (ans[n] == '\n')
            break;
        n++;
    }
    ans[n] = '\0';
    if (strncmp(ans, "OK", 2) != 0)
        bench_die("proxy control: %s: %s", cmd, ans);
    return atol(ans + 2);
}

static int bench_resync(const bench_cfg_t *cfg, int data, const char *proxy)
{
    const char *base = "/zkr-bench/cache10k";
    int n = 10000;
    if (!proxy || !strchr(proxy, '/'))
        bench_die("cacheresync: needs -P HOST:PORT/CONTROL_PORT (zkr_bench -c proxy)");
    char hosts[256], ctlhost[256];
    snprintf(hosts, sizeof hosts, "%.*s", (int)(strchr(proxy, '/') - proxy), proxy);
    snprintf(ctlhost, sizeof ctlhost, "127.0.0.1:%s", strchr(proxy, '/') + 1);
    int cfd = tcp_connect(ctlhost);
    if (cfd < 0)
        bench_die("cacheresync: no proxy control on %s", ctlhost);
    zhandle_t *zh = raw_open(cfg);
    ensure_tree(zh, base, n);
    zkr_client_t *c = client_at(cfg, hosts);
    told_t t;
    told_init(&t);
    if (zkr_client_add_listener(c, on_state, &t) != ZKR_OK)
        bench_die("cacheresync: no state listener");
    zkr_cache_t *k = cache_start(c, base, data, &t);
    wait_initialized(&t);
    /* K distinct leaves, their new data */
    unsigned seed = (unsigned)getpid() * 2654435761u ^ (unsigned)time(NULL);
    char *paths[RESYNC_K], vals[RESYNC_K][64];
    for (int i = 0; i < RESYNC_K; i++) {
        int again;
        do {
            paths[i] = leaf_path(base, n, (int)(next_rand(&seed) % (unsigned)n));
            again = 0;
            for (int j = 0; j < i; j++)
                again |= strcmp(paths[i], paths[j]) == 0;
            if (again)
                free(paths[i]);
        } while (again);
        snprintf(vals[i], sizeof vals[i], "r%d-%d-%u", (int)getpid(), i, next_rand(&seed));
    }
    int64_t session0 = 0, session1 = 0;
    zkr_client_session(c, &session0, NULL);
    ctl(cfd, "stall 1");
    ctl(cfd, "cut");
    pthread_mutex_lock(&t.mu);
    int cut = wait_flag(&t, &t.suspended, 10000);
    pthread_mutex_unlock(&t.mu);
    if (!cut)
        bench_die("cacheresync: the client did not see the cut");
    for (int i = 0; i < RESYNC_K; i++) {
        int rc = zoo_set(zh, paths[i], vals[i], (int)strlen(vals[i]), -1);
        if (rc != ZOK)
            bench_die("cacheresync: set %s: %s", paths[i], zerror(rc));
    }
    double p0 = packets(cfg->hosts);
    double t0 = bench_now_ms();
    ctl(cfd, "stall 0");
    double held_ms = -1;
    while (bench_now_ms() - t0 < WAIT_MS) {
        int all = 1;
        for (int i = 0; i < RESYNC_K && all; i++) {
            zkr_cache_node_t *node = NULL;
            all = zkr_cache_get(k, paths[i], &node) == ZKR_OK && node->data && strcmp(node->data, vals[i]) == 0;
            zkr_cache_node_free(node);
        }
        if (all) {
            held_ms = bench_now_ms() - t0;
            break;
        }
        struct timespec ts = {0, 200 * 1000};
        nanosleep(&ts, NULL);
    }
    /* quiet: three polls 100 ms apart, each no more than 2 requests (other
     * idle sessions' pings) past the one before; what they saw is counted */
    double plast = packets(cfg->hosts), quiet_at = bench_now_ms();
    int polls = 1;
    for (int still = 0; still < 3 && bench_now_ms() - t0 < WAIT_MS;) {
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
        double p = packets(cfg->hosts);
        polls++;
        if (p - plast - 1 > 2) {
            still = 0;
            quiet_at = bench_now_ms();
        } else {
            still++;
        }
        plast = p;
    }
    double p1 = plast - polls;
    pthread_mutex_lock(&t.mu);
    double rec_ms = t.reconnected ? t.reconnected_ms - t0 : -1;
    pthread_mutex_unlock(&t.mu);
    zkr_client_session(c, &session1, NULL);
    int errors = (held_ms < 0) + (session1 != session0);
    printf("RESULT impl=%s scenario=%s threads=1 sessions=2 ops=%d secs=%.3f rate=%.1f p50_ms=%.3f "
           "p99_ms=%.3f lat=resync errors=%d changed=%d nodes=%zu reconnect_ms=%.3f quiet_ms=%.0f req=%.0f "
           "same_session=%d\n",
           impl_label(data), cfg->scenario, RESYNC_K, held_ms / 1e3, held_ms > 0 ? RESYNC_K / (held_ms / 1e3) : 0,
           held_ms, held_ms, errors, RESYNC_K, zkr_cache_size(k), rec_ms, quiet_at - t0, p1 - p0,
           session1 == session0);
    fflush(stdout);
    for (int i = 0; i < RESYNC_K; i++)
        free(paths[i]);
    zkr_cache_free(k);
    zkr_client_remove_listener(c, on_state, &t);
    zkr_client_close(c);
    zookeeper_close(zh);
    close(cfd);
    told_fini(&t);
    return errors ? 1 : 0;
}

/* ---- the proxy ------------------------------------------------------------------------------ */

static int bench_proxy(const bench_cfg_t *cfg)
{
    const char *colon = strrchr(cfg->hosts, ':');
    int target = colon ? atoi(colon + 1) : 0;
    if (strchr(cfg->hosts, ','))
        bench_die("proxy: one server only");
    zkt_proxy_t *p = target > 0 ? zkt_proxy_start(target) : NULL;
    if (!p)
        bench_die("proxy: cannot start in front of %s", cfg->hosts);
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof sa;
    int one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(lfd, 8) != 0 ||
        getsockname(lfd, (struct sockaddr *)&sa, &sl) != 0)
        bench_die("proxy: no control socket");
    printf("PROXY %s %d\n", zkt_proxy_hosts(p), ntohs(sa.sin_port));
    fflush(stdout);
    int cfd = -1;
    char line[128];
    size_t n = 0;
    for (;;) {
        struct pollfd fds[3] = {{0, POLLIN, 0}, {lfd, POLLIN, 0}, {cfd, POLLIN, 0}};
        if (poll(fds, cfd >= 0 ? 3 : 2, -1) < 0 && errno != EINTR)
            break;
        if (fds[0].revents) { /* stdin: closed (or anything) ends it */
            char junk[256];
            if (read(0, junk, sizeof junk) <= 0)
                break;
        }
        if (fds[1].revents & POLLIN) {
            int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
            if (fd >= 0) {
                if (cfd >= 0)
                    close(cfd); /* one controller at a time: the newest */
                cfd = fd;
                n = 0;
            }
            continue;
        }
        if (cfd >= 0 && fds[2].revents) {
            ssize_t r = recv(cfd, line + n, 1, 0);
            if (r <= 0) {
                close(cfd);
                cfd = -1;
                continue;
            }
            if (line[n] != '\n' && n < sizeof line - 2) {
                n++;
                continue;
            }
            line[n] = '\0';
            n = 0;
            char ans[64] = "OK\n";
            if (strcmp(line, "stall 1") == 0 || strcmp(line, "stall 0") == 0) {
                if (zkt_proxy_stall(p, line[6] == '1') != 0)
                    snprintf(ans, sizeof ans, "ERR stall\n");
            } else if (strcmp(line, "cut") == 0) {
                zkt_proxy_cut(p);
            } else if (strcmp(line, "conns") == 0) {
                snprintf(ans, sizeof ans, "OK %d\n", zkt_proxy_connections(p));
            } else {
                snprintf(ans, sizeof ans, "ERR unknown\n");
            }
            if (send(cfd, ans, strlen(ans), MSG_NOSIGNAL) < 0) {
                close(cfd);
                cfd = -1;
            }
        }
    }
    if (cfd >= 0)
        close(cfd);
    close(lfd);
    zkt_proxy_stop(p);
    return 0;
}

int bench_cache(const bench_cfg_t *cfg, const char *impl, int count, const char *proxy)
{
    int data = strcmp(impl, "zkrnodata") != 0;
    if (strcmp(impl, "zkr") != 0 && data)
        bench_die("%s: zkr or zkrnodata only", cfg->scenario);
    if (strcmp(cfg->scenario, "proxy") == 0)
        return bench_proxy(cfg);
    if (strcmp(cfg->scenario, "cachetree") == 0) {
        zhandle_t *zh = raw_open(cfg);
        ensure_tree(zh, cfg->base, count ? count : 10000);
        zookeeper_close(zh);
        printf("RESULT impl=%s scenario=cachetree threads=1 sessions=1 ops=%d secs=0 rate=0 p50_ms=0 p99_ms=0 "
               "lat=none errors=0\n",
               impl, count ? count : 10000);
        return 0;
    }
    if (strcmp(cfg->scenario, "cacheload10k") == 0)
        return bench_load(cfg, data);
    if (strcmp(cfg->scenario, "cachelatency") == 0)
        return bench_latency(cfg, data, count ? count : 2000);
    if (strcmp(cfg->scenario, "cachewatches") == 0)
        return bench_watches(cfg, data);
    if (strcmp(cfg->scenario, "cacheresync") == 0)
        return bench_resync(cfg, data, proxy);
    bench_die("%s: not a cache scenario", cfg->scenario);
}

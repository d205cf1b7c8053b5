/* zkr_bench: leader election, the same shapes as CuratorBench.java's
 * runHandover and runJoin, so that both are measured alike.
 *
 * latch10, selector10: hand-over latency with n participants (default 10),
 *   one session each, joined in order.  The leader leaves (latch: closes,
 *   then joins again at the back on its session; selector: its callback
 *   returns, auto-requeue puts it at the back) and the time until the next
 *   participant is told it leads is one sample (latch: its listener;
 *   selector: its callback starts).  Repeated for the run's seconds.
 * latchjoin100, selectorjoin100: n participants (default 100) over 10
 *   sessions opened beforehand join from one thread; the time from the
 *   first start until every node is listed (a plain listing, polled every
 *   millisecond on a session of its own) and the first is told it leads. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <zookeeper/zookeeper.h>
#include <zkr/zkr.h>

#include "tests/bench/bench.h"

#define TOLD_MAX 4096

typedef struct election election_t;

typedef struct part {
    int no;
    election_t *e;
    zkr_latch_t *latch;
    zkr_selector_t *sel;
    double told_ms;
    int end_term; /* selector: the driver ends the term (under e->mu) */
} part_t;

struct election {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    part_t *told[TOLD_MAX]; /* told it leads, in order, not yet taken */
    int ntold;
};

static void told(part_t *p)
{
    election_t *e = p->e;
    pthread_mutex_lock(&e->mu);
    p->told_ms = bench_now_ms();
    if (e->ntold < TOLD_MAX)
        e->told[e->ntold++] = p;
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
}

/* Wait on e->cv (e->mu held) at most ms. */
static void wait_ms(election_t *e, int ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += (long)ms * 1000 * 1000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    pthread_cond_timedwait(&e->cv, &e->mu, &ts);
}

static void on_latch(zkr_latch_t *latch, int is_leader, int64_t token, void *ctx)
{
    (void)latch;
    (void)token;
    if (is_leader)
        told(ctx);
}

static void take_leadership(zkr_selector_t *s, int64_t token, void *ctx)
{
    (void)token;
    part_t *p = ctx;
    election_t *e = p->e;
    told(p);
    pthread_mutex_lock(&e->mu);
    while (!p->end_term && !zkr_selector_should_stop(s))
        wait_ms(e, 50);
    p->end_term = 0;
    pthread_mutex_unlock(&e->mu);
}

static void join(part_t *p, int latch, zkr_client_t *c, const char *path)
{
    char id[32];
    snprintf(id, sizeof id, "p%d", p->no);
    int rc;
    if (latch) {
        rc = zkr_latch_new(&p->latch, c, path, id);
        if (rc == ZKR_OK)
            rc = zkr_latch_set_listener(p->latch, on_latch, p);
        if (rc == ZKR_OK)
            rc = zkr_latch_start(p->latch);
    } else {
        rc = zkr_selector_new(&p->sel, c, path, id, take_leadership, p);
        if (rc == ZKR_OK)
            rc = zkr_selector_set_auto_requeue(p->sel, 1);
        if (rc == ZKR_OK)
            rc = zkr_selector_start(p->sel);
    }
    if (rc != ZKR_OK)
        bench_die("participant %d cannot join: %s", p->no, zkr_strerror(rc));
}

static void leave(part_t *p)
{
    if (p->latch) {
        zkr_latch_close(p->latch, ZKR_LATCH_CLOSE_SILENT);
        zkr_latch_free(p->latch);
        p->latch = NULL;
    }
    if (p->sel) {
        zkr_selector_close(p->sel);
        zkr_selector_free(p->sel);
        p->sel = NULL;
    }
}

/* The next participant told it leads, waiting at most ms; NULL. */
static part_t *next_told(election_t *e, int ms)
{
    double end = bench_now_ms() + ms;
    pthread_mutex_lock(&e->mu);
    while (e->ntold == 0 && bench_now_ms() < end)
        wait_ms(e, 5);
    part_t *p = NULL;
    if (e->ntold > 0) {
        p = e->told[0];
        memmove(e->told, e->told + 1, (size_t)(e->ntold - 1) * sizeof *e->told);
        e->ntold--;
    }
    pthread_mutex_unlock(&e->mu);
    return p;
}

static zhandle_t *raw_open(const bench_cfg_t *cfg)
{
    zhandle_t *zh = bench_impl_floor.session_open(cfg, 0);
    if (!zh)
        bench_die("cannot open a plain ZooKeeper handle");
    return zh;
}

/* Children of path now (0 if it does not exist yet). */
static int children(zhandle_t *zh, const char *path)
{
    struct String_vector sv = {0, NULL};
    if (zoo_get_children(zh, path, 0, &sv) != ZOK)
        return 0;
    int n = sv.count;
    deallocate_String_vector(&sv);
    return n;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static election_t *election_new(void)
{
    election_t *e = calloc(1, sizeof *e);
    if (!e)
        bench_die("out of memory");
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    return e;
}

static void election_free(election_t *e)
{
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->cv);
    free(e);
}

static int bench_handover(const bench_cfg_t *cfg, int latch, int n)
{
    zkr_client_t **cs = calloc((size_t)n, sizeof *cs);
    part_t *parts = calloc((size_t)n, sizeof *parts);
    double *lat = calloc(1u << 20, sizeof *lat);
    if (!cs || !parts || !lat)
        bench_die("out of memory");
    election_t *e = election_new();
    char *path = bench_lock_path(cfg, 0, -1);
    zhandle_t *zh = raw_open(cfg);
    for (int i = 0; i < n; i++) {
        if (!(cs[i] = bench_impl_zkr.session_open(cfg, i)))
            bench_die("cannot open a zkrecipes client");
        parts[i].no = i;
        parts[i].e = e;
        join(&parts[i], latch, cs[i], path);
        for (int k = 0; k < 60000 && children(zh, path) < i + 1; k++) { /* joined in order */
            struct timespec ts = {0, 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    size_t nlat = 0;
    int errors = 0;
    part_t *leader = next_told(e, 60000);
    double t0 = bench_now_ms(), deadline = t0 + cfg->seconds * 1e3;
    while (leader && bench_now_ms() < deadline && nlat < (1u << 20)) {
        double gone = bench_now_ms();
        if (latch) {
            zkr_latch_close(leader->latch, ZKR_LATCH_CLOSE_SILENT);
        } else {
            pthread_mutex_lock(&e->mu);
            leader->end_term = 1;
            pthread_cond_broadcast(&e->cv);
            pthread_mutex_unlock(&e->mu);
        }
        part_t *next = next_told(e, 60000);
        if (!next) {
            errors++;
            break;
        }
        lat[nlat++] = next->told_ms - gone;
        if (latch) { /* joins again at the back, on its session */
            zkr_latch_free(leader->latch);
            leader->latch = NULL;
            join(leader, 1, cs[leader->no], path);
        }
        leader = next;
    }
    double secs = (bench_now_ms() - t0) / 1e3;
    for (int i = 0; i < n; i++)
        leave(&parts[i]);
    qsort(lat, nlat, sizeof *lat, cmp_double);
    printf("RESULT impl=zkr scenario=%s threads=%d sessions=%d ops=%zu secs=%.3f rate=%.1f "
           "p50_ms=%.3f p99_ms=%.3f lat=handoff errors=%d\n",
           cfg->scenario, n, n, nlat, secs, (double)nlat / secs, nlat ? lat[(nlat - 1) / 2] : 0,
           nlat ? lat[(size_t)((double)(nlat - 1) * 0.99)] : 0, errors);
    fflush(stdout);
    for (int i = 0; i < n; i++)
        zkr_client_close(cs[i]);
    zookeeper_close(zh);
    election_free(e);
    free(path);
    free(lat);
    free(parts);
    free(cs);
    return errors ? 1 : 0;
}

static int bench_join(const bench_cfg_t *cfg, int latch, int n)
{
    enum { NS = 10 };
    zkr_client_t *cs[NS];
    part_t *parts = calloc((size_t)n, sizeof *parts);
    if (!parts)
        bench_die("out of memory");
    for (int i = 0; i < NS; i++)
        if (!(cs[i] = bench_impl_zkr.session_open(cfg, i)))
            bench_die("cannot open a zkrecipes client");
    zhandle_t *zh = raw_open(cfg);
    election_t *e = election_new();
    char *path = bench_lock_path(cfg, 0, -1);
    int errors = 0;
    double t0 = bench_now_ms();
    for (int i = 0; i < n; i++) {
        parts[i].no = i;
        parts[i].e = e;
        join(&parts[i], latch, cs[i % NS], path);
    }
    while (children(zh, path) < n) {
        if (bench_now_ms() - t0 > 300000) {
            errors++;
            break;
        }
        struct timespec ts = {0, 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (!next_told(e, 60000))
        errors++;
    double ms = bench_now_ms() - t0;
    for (int i = 0; i < n; i++)
        leave(&parts[i]);
    printf("RESULT impl=zkr scenario=%s threads=%d sessions=%d ops=%d secs=%.3f rate=%.1f "
           "p50_ms=%.3f p99_ms=%.3f lat=join errors=%d\n",
           cfg->scenario, n, NS, n, ms / 1e3, n / (ms / 1e3), ms, ms, errors);
    fflush(stdout);
    for (int i = 0; i < NS; i++)
        zkr_client_close(cs[i]);
    zookeeper_close(zh);
    election_free(e);
    free(path);
    free(parts);
    return errors ? 1 : 0;
}

int bench_leader(const bench_cfg_t *cfg, int count)
{
    int latch = strncmp(cfg->scenario, "latch", 5) == 0;
    if (strstr(cfg->scenario, "join"))
        return bench_join(cfg, latch, count ? count : 100);
    return bench_handover(cfg, latch, count ? count : 10);
}

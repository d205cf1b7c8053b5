/* Counter workers and the exactly-once check (tests/counter_check.h). */
#include "tests/counter_check.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void record(cw_t *w, int rc, int succeeded, int64_t post)
{
    if (w->pause_ms > 0) {
        struct timespec ts = {w->pause_ms / 1000, (long)(w->pause_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    if (rc == ZKR_OK && succeeded) {
        if (w->ok < CW_MAX)
            w->ok_posts[w->ok] = post;
        w->ok++;
    } else if (rc == ZKR_OK) {
        w->failed++;
    } else if (rc == ZKR_ECONNLOSS) {
        if (w->unknown < CW_MAX)
            w->unknown_posts[w->unknown] = post;
        w->unknown++;
    } else {
        w->other++;
        w->last_other = rc;
    }
}

void *cw_atomic(void *arg)
{
    cw_t *w = arg;
    zkr_atomic_options_t opt;
    zkr_atomic_options_init(&opt);
    zkr_retry_exponential(&opt.retry, 1, w->retries, 50);
    opt.lock_path = w->lock_path;
    zkr_retry_exponential(&opt.lock_retry, 1, 5, 50);
    if (w->timeout_ms)
        opt.timeout_ms = w->timeout_ms;
    zkr_atomic_long_t *a = NULL;
    int rc = zkr_atomic_long_new(&a, w->c, w->path, &opt);
    if (rc != ZKR_OK) {
        record(w, rc, 0, 0);
        return NULL;
    }
    int64_t end = now_ms() + (w->run_ms ? w->run_ms : 120000);
    int i;
    for (i = 0; i < w->n && now_ms() < end; i++) {
        zkr_atomic_result_t r;
        rc = zkr_atomic_long_increment(a, &r);
        if (rc == ZKR_OK && r.succeeded && r.post_value != r.pre_value + 1)
            w->wrong++;
        if (r.promoted_tries > 0) {
            w->promoted++;
            if (rc == ZKR_OK && r.succeeded)
                w->promoted_ok++;
        }
        record(w, rc, r.succeeded, r.post_value);
    }
    w->ran_out = i >= w->n;
    zkr_atomic_long_free(a);
    return NULL;
}

void *cw_count(void *arg)
{
    cw_t *w = arg;
    zkr_count_t *sc = NULL;
    int rc = zkr_count_new(&sc, w->c, w->path, 0);
    int64_t end = now_ms() + (w->run_ms ? w->run_ms : 120000);
    while (rc == ZKR_OK && (rc = zkr_count_start(sc, w->timeout_ms ? w->timeout_ms : 15000)) != ZKR_OK &&
           now_ms() < end)
        rc = ZKR_OK; /* a fault at the start: start again */
    if (rc != ZKR_OK) {
        record(w, rc, 0, 0);
        zkr_count_free(sc);
        return NULL;
    }
    while (w->ok < w->n && now_ms() < end) {
        int32_t v = 0, ver = 0;
        int set = 0;
        rc = zkr_count_get(sc, &v, &ver);
        if (rc == ZKR_OK)
            rc = zkr_count_try_set(sc, ver, v + 1, &set, w->timeout_ms ? w->timeout_ms : 15000);
        record(w, rc, set, (int64_t)v + 1);
    }
    w->ran_out = w->ok >= w->n;
    zkr_count_free(sc);
    return NULL;
}

void cw_run(cw_t *ws, int n, zkr_client_t **cs, int clients, void *(*fn)(void *))
{
    pthread_t *th = calloc((size_t)n, sizeof *th);
    for (int i = 0; i < n; i++) {
        ws[i].c = cs[i % clients];
        pthread_create(&th[i], NULL, fn, &ws[i]);
    }
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    free(th);
}

cw_sum_t cw_sum(const cw_t *ws, int n)
{
    cw_sum_t s;
    memset(&s, 0, sizeof s);
    for (int i = 0; i < n; i++) {
        s.ok += ws[i].ok;
        s.failed += ws[i].failed;
        s.unknown += ws[i].unknown;
        s.other += ws[i].other;
        s.promoted += ws[i].promoted;
        s.promoted_ok += ws[i].promoted_ok;
        s.wrong += ws[i].wrong;
    }
    return s;
}

int cw_exactly_once(const cw_t *ws, int n, int64_t final, int *applied)
{
    cw_sum_t s = cw_sum(ws, n);
    *applied = -1;
    if (final < s.ok || final > s.ok + s.unknown || final > 1000000) {
        printf("\n    final %lld outside [%d, %d]", (long long)final, s.ok, s.ok + s.unknown);
        return 0;
    }
    for (int i = 0; i < n; i++)
        if (ws[i].ok > CW_MAX || ws[i].unknown > CW_MAX) {
            printf("\n    more outcomes than recorded");
            return 0;
        }
    char *by = calloc((size_t)final + 1, 1); /* 1: a success wrote it */
    int ok = 1;
    for (int i = 0; i < n && ok; i++)
        for (int k = 0; k < ws[i].ok && ok; k++) {
            int64_t p = ws[i].ok_posts[k];
            if (p < 1 || p > final || by[p]) {
                printf("\n    a success wrote %lld: %s", (long long)p, p < 1 || p > final ? "out of range" : "twice");
                ok = 0;
            } else {
                by[p] = 1;
            }
        }
    int used = 0;
    for (int i = 0; i < n && ok; i++)
        for (int k = 0; k < ws[i].unknown; k++) {
            int64_t p = ws[i].unknown_posts[k];
            if (p >= 1 && p <= final && !by[p]) {
                by[p] = 2;
                used++;
            }
        }
    for (int64_t v = 1; v <= final && ok; v++)
        if (!by[v]) {
            printf("\n    value %lld was written by no success and no unknown outcome", (long long)v);
            ok = 0;
        }
    free(by);
    if (ok)
        *applied = used;
    return ok;
}

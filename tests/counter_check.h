/* Counter workers for the counter suites (test_counter, _interop,
 * _faults): a thread incrementing an atomic long, or a shared count in a
 * try_set loop, that records each outcome and the value each success (and
 * each unknown outcome) wrote; and the check that the server's final value
 * is exactly the successes plus some of the unknowns, none applied twice.
 * No CUnit here (threads): the main thread asserts. */
#ifndef ZKR_COUNTER_CHECK_H
#define ZKR_COUNTER_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "zkr/zkr.h"

#define CW_MAX 8192 /* outcomes recorded per worker */

typedef struct cw {
    /* what to do */
    zkr_client_t *c;
    const char *path;
    const char *lock_path; /* atomic: promoted to this lock (NULL: never) */
    int retries;           /* atomic: optimistic retries */
    int n;                 /* atomic: increments made; count: successes wanted */
    int64_t timeout_ms;    /* each call */
    int64_t run_ms;        /* stop after this long at the latest */
    int pause_ms;          /* between two calls */
    /* what happened */
    int ok, failed, unknown, other, promoted, promoted_ok, wrong;
    int last_other;                 /* the last other code */
    int ran_out;                    /* stopped by n, not by run_ms */
    int64_t ok_posts[CW_MAX];       /* values the successes wrote */
    int64_t unknown_posts[CW_MAX];  /* values the unknown outcomes may have written */
} cw_t;

/* Thread bodies (arg: a cw_t). */
void *cw_atomic(void *arg);
void *cw_count(void *arg);

/* Run n workers (ws[i] filled but for c and the results) on `clients`
 * clients (ws[i].c = cs[i % clients]), body fn; joins them. */
void cw_run(cw_t *ws, int n, zkr_client_t **cs, int clients, void *(*fn)(void *));

/* Sums over n workers. */
typedef struct cw_sum {
    int ok, failed, unknown, other, promoted, promoted_ok, wrong;
} cw_sum_t;
cw_sum_t cw_sum(const cw_t *ws, int n);

/* The exactly-once check for a counter that started at 0 and only these
 * workers changed: every success wrote a different value in 1..final,
 * ok <= final <= ok + unknown, and each value in 1..final no success wrote
 * is one an unknown outcome may have written (each used once).  Returns
 * 1, or 0 with why (and prints it). *applied: how many unknowns were. */
int cw_exactly_once(const cw_t *ws, int n, int64_t final, int *applied);

#endif

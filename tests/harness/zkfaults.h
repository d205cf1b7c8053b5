/* What the invariant checkers under faults share (tests/test_faults.c for
 * the locks, tests/test_leader_faults.c for elections): a 3-node ensemble
 * whose ZooKeeper leader is killed and restarted, a log of when each fault
 * began and ended (and on which worker), the excuse of a session or node
 * closed from outside, and a listing of the nodes left in a directory. */
#ifndef ZKFAULTS_H
#define ZKFAULTS_H

#include <stdint.h>
#include <stdio.h>
#include <zookeeper/zookeeper.h>

/* ---- a 3-node ensemble (zkserver.sh ensemble-*, under ZKR_TEST_ZKDIR) ---- */

/* Start it; 0 when it serves (a CUnit suite init), 1 otherwise. */
int zkt_ensemble_up(void);
/* Kill every node; returns 0 (a CUnit suite cleanup). */
int zkt_ensemble_down(void);
/* Its connection string ("" before zkt_ensemble_up). */
const char *zkt_ensemble_hosts(void);
/* Kill the current ZooKeeper leader (waiting, bounded: 30 s, until there
 * is one); its number, or -1. */
int zkt_ensemble_kill_leader(void);
/* Start node k again; 0 when it serves. */
int zkt_ensemble_restart(int k);
/* Kill the ZooKeeper leader, leave it down for down_ms, start it again:
 * 0 if both worked, -1 otherwise. */
int zkt_ensemble_bounce_leader(int down_ms);

/* ---- the fault log -------------------------------------------------------- */

typedef struct zkt_fault {
    const char *what; /* a string literal: "forced expiry", "outside deletion", ... */
    int worker;       /* the worker it was aimed at, -1 for all */
    int64_t begin, end; /* zkt_now_ms(); end 0 while it lasts */
} zkt_fault_t;

/* Forget every fault (before a workload's schedule). */
void zkt_faults_reset(void);
/* A fault begins (at most 16 are kept: later ones reuse the last slot);
 * returns its index for zkt_fault_end. */
int zkt_fault_begin(const char *what, int worker);
void zkt_fault_end(int i);
int zkt_fault_count(void);
const zkt_fault_t *zkt_fault_get(int i);
/* "  fault WHAT (worker W): BEGIN .. END" for each, in ms relative to ref
 * ("%+lld"), or absolute when ref is 0 ("%lld"). */
void zkt_faults_print(FILE *f, int64_t ref);

/* A session closed from outside (a "forced expiry") or a node deleted by
 * another session (an "outside deletion") is dropped by the server at once:
 * nothing can tell its owner before another process sees it go, so the
 * checkers excuse an overlap with the victim when the victim learnt it
 * within a bound.  The index of the first such fault at index `from` or
 * later aimed at worker a or b, whose span (up to `bound` ms after its end)
 * holds `at`; -1 if none. */
int zkt_fault_outside(int a, int b, int64_t at, int64_t bound, int from);

/* ---- what is on the server --------------------------------------------------- */

/* Print "LABEL: DIR has N nodes:" and a line per child, with its owner and
 * when it was made, in ms before ref_ms (zkt_now_ms()'s clock): what a
 * stuck workload's queue looks like. */
void zkt_print_nodes(FILE *f, zhandle_t *zh, const char *dir, const char *label, int64_t ref_ms);

#endif

/* What the cache suites share (tests/test_cache_interop.c,
 * tests/test_cache_faults.c): trees of nodes read from the server, from a
 * zkr_cache_t's copy (zkr_cache_walk) or from the events its listener was
 * told (replayed), compared; a listener that records every event; the
 * checker of the event sequences cache.h promises; a random writer on a
 * raw ZooKeeper handle.  No CUnit here (the writer runs in a thread). */
#ifndef ZKR_CACHE_CHECK_H
#define ZKR_CACHE_CHECK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <zookeeper/zookeeper.h>

#include "zkr/cache.h"

/* ---- trees ---------------------------------------------------------------------- */

typedef struct cc_node {
    char *path;
    char *data; /* len bytes (NULL: not known, only len and crc) */
    size_t len;
    uint32_t crc; /* CRC-32 of the data (java.util.zip.CRC32's) */
    int64_t czxid, mzxid;
    int32_t version;
    int depth; /* below the root: 0 for the root itself */
} cc_node_t;

typedef struct cc_tree {
    cc_node_t *v;
    size_t n, cap;
} cc_tree_t;

uint32_t cc_crc32(const void *data, size_t len);
/* Add a node (data copied when not NULL; crc computed then). */
void cc_tree_add(cc_tree_t *t, const char *path, const char *data, size_t len, uint32_t crc, int64_t czxid,
                 int64_t mzxid, int32_t version, int depth);
void cc_tree_clear(cc_tree_t *t);
/* Order of a walk: parents before children, siblings by name (bytewise). */
int cc_path_cmp(const char *a, const char *b);
void cc_tree_sort(cc_tree_t *t);
/* Depth of path below root (0: root itself; -1: not root nor below it). */
int cc_depth(const char *root, const char *path);

/* What a cache of this shape holds of the server's subtree at root. */
typedef struct cc_scope {
    const char *root;
    zkr_cache_shape_t shape;
    int max_depth; /* TREE: < 0 no limit */
    int data;      /* opt.data */
} cc_scope_t;
/* 1 if a node at `depth` below the root is in the scope. */
int cc_in_scope(const cc_scope_t *s, int depth);

/* The server's nodes in scope, sorted: 0, or -1 if a read failed (the
 * reason in why).  The tree must not change meanwhile. */
int cc_server_tree(zhandle_t *zh, const cc_scope_t *s, cc_tree_t *out, char *why, size_t len);
/* The copy through zkr_cache_walk(cache, NULL): 0 (an empty tree when
 * ZKR_ENONODE), else the walk's error; *ordered 0 if the walk did not go
 * in walk order; only nodes in scope kept (the ZKR_CACHE_CHILDREN path
 * itself left out, counted in *extra_root). */
int cc_cache_tree(zkr_cache_t *c, const cc_scope_t *s, cc_tree_t *out, int *ordered, int *out_of_scope);

/* Compare two sorted trees: 0 if equal in paths, czxid, and (what) mzxid
 * and data; else the number of differences, the first few in why. */
#define CC_CMP_MZXID 1
#define CC_CMP_DATA 2
#define CC_CMP_ALL (CC_CMP_MZXID | CC_CMP_DATA)
int cc_tree_diff(const cc_tree_t *a, const char *an, const cc_tree_t *b, const char *bn, int what, char *why,
                 size_t len);
void cc_tree_print(FILE *f, const cc_tree_t *t, const char *label);

/* ---- the event log ----------------------------------------------------------------- */

typedef struct cc_event {
    zkr_cache_event_type_t type;
    zkr_state_t state;
    char *path;
    char *data;
    size_t len;
    int has_data;
    int nul_ok; /* data[len] was NUL */
    int64_t czxid, mzxid;
    int32_t version;
    int64_t at_ms;
    int fresh; /* zkr_cache_is_fresh(cache) during the call */
} cc_event_t;

typedef struct cc_log {
    pthread_mutex_t mu;
    cc_event_t *v;
    size_t n, cap;
    zkr_client_t *client; /* for the state checks (may be NULL) */
    atomic_int inits;     /* INITIALIZED told (counted once in v) */
    atomic_int states[8]; /* STATE told, by state (counted once in v) */
    atomic_int bad_node;  /* a node event without a node, a state event with one */
    /* SUSPENDED/LOST told while the client still said so before and after
     * zkr_cache_is_fresh: how often, and how often is_fresh said 1 then */
    atomic_int down_checked, fresh_while_down;
    /* cc_log_check prints only what breaks the rules at this index or
     * later (counting all) */
    size_t quiet_before;
} cc_log_t;

void cc_log_init(cc_log_t *log, zkr_client_t *client);
void cc_log_free(cc_log_t *log);
/* A test's hook: called by cc_listener (on the callback thread) just
 * before it records an event in the log (NULL: none).  Set it before the
 * cache starts, clear it after the cache is closed. */
extern void (*cc_before_record)(const zkr_cache_event_t *ev);
/* The listener: ctx is the cc_log_t. */
void cc_listener(zkr_cache_t *cache, const zkr_cache_event_t *ev, void *ctx);
size_t cc_log_count(cc_log_t *log);
/* Events of type (and state, for STATE) at index >= from. */
int cc_log_has(cc_log_t *log, size_t from, zkr_cache_event_type_t type, zkr_state_t state);
/* Node events of path at >= from, as "CREATED:czxid:mzxid ..." (malloc'd). */
char *cc_log_of(cc_log_t *log, const char *path, size_t from);

/* Check the whole log against scope (cache.h's rules): per node CREATED
 * first, then CHANGED with the same czxid and a larger mzxid, DELETED of
 * the node as last told, a later CREATED with a larger czxid; only nodes in
 * scope; data present with a NUL after it iff scope->data; no CHANGED
 * without data.  Fills model with the replayed copy (sorted).  Returns the
 * number of violations (the first few printed to f with label; f NULL:
 * quiet).  Only the events before index upto ((size_t)-1: all). */
int cc_log_check(cc_log_t *log, const cc_scope_t *scope, cc_tree_t *model, FILE *f, const char *label, size_t upto);
/* The index of the nth (0: first) event of type, (size_t)-1 if none. */
size_t cc_log_index(cc_log_t *log, zkr_cache_event_type_t type, int nth);

/* ---- a cache under test ------------------------------------------------------------------------ */

typedef struct cc_cache {
    zkr_cache_t *cache;
    cc_log_t log;
    cc_scope_t scope;
    char root[512];
    char name[64];
    struct cc_cache *next; /* (the list of open caches) */
} cc_cache_t;

/* A cache of root on c with the recording listener, started, initialized
 * and INITIALIZED told to the listener (and in its log): ZKR_OK, or the
 * first error (ZKR_ETIMEDOUT: INITIALIZED not told within 5 s), the cache
 * then closed.  An open cache is on a list until cc_cache_close. */
int cc_cache_open(cc_cache_t *t, zkr_client_t *c, const char *root, zkr_cache_shape_t shape, int max_depth,
                  int data, const char *name, int64_t init_ms);
void cc_cache_close(cc_cache_t *t);
/* Close every cache still open (before a test gives up: their listeners
 * write to logs in the test's stack frame). */
void cc_cache_close_all(void);
/* A fatal assert that first closes every open cache: a failing test
 * stops cleanly instead of leaving a listener writing to a dead frame
 * (for the test files, which include CUnit). */
#define CC_ASSERT_FATAL(cond)                                                                  \
    do {                                                                                       \
        int cc_ok_ = !!(cond);                                                                 \
        if (!cc_ok_)                                                                           \
            cc_cache_close_all();                                                              \
        CU_assertImplementation(cc_ok_, __LINE__, #cond, __FILE__, "", CU_TRUE);               \
    } while (0)

typedef struct cc_result {
    int64_t ms;      /* how long until equal; -1: not within the bound */
    int walk_rc;     /* zkr_cache_walk's last return */
    int ordered;     /* the walk went parents first, siblings by name */
    int out_of_scope; /* walk: nodes the cache should not hold, wrong depth or data */
    int copy_diffs, model_diffs; /* at the end */
    int violations;  /* of the event rules (cc_log_check) */
    size_t events, nodes;
} cc_result_t;

/* Poll (bounded: ms) until the copy (zkr_cache_walk) and the events
 * replayed both equal `server` (what: CC_CMP_*), then check the whole
 * event log.  0 if all is well; -1 otherwise (what differs printed to f). */
int cc_converge(cc_cache_t *t, const cc_tree_t *server, int what, int ms, FILE *f, cc_result_t *r);

/* ---- a random writer ------------------------------------------------------------------- */

typedef struct cc_wstats {
    int ops, creates, sets, same_sets, deletes, subtrees, recreates, txrecreates, roots, errors;
} cc_wstats_t;

/* One random operation on the subtree at root (depth up to max_depth): a
 * create, a setData (a quarter of them with the same data), a delete of a
 * leaf, of a subtree, a delete and create again with the same data (one
 * request after the other, or in one multi), rarely the root deleted with
 * all below it and created again; the root is created when missing.  The
 * node is chosen by a random descent read from the server.  Returns the
 * ZooKeeper error of the last request (ZOK). */
int cc_random_op(zhandle_t *zh, const char *root, int max_depth, unsigned *seed, cc_wstats_t *st);
void cc_wstats_print(FILE *f, const cc_wstats_t *st, const char *label);
/* Delete path and everything below it (ZOK, ZNONODE, or the error). */
int cc_rmr(zhandle_t *zh, const char *path);
/* Create every missing parent of path (not path itself). */
void cc_make_parents(zhandle_t *zh, const char *path);

/* A writer thread doing cc_random_op until stopped (bounded: max_ops,
 * max_ms), pausing pause_ms between operations; it can be paused. */
typedef struct cc_writer {
    zhandle_t *zh;
    const char *root;
    int max_depth;
    unsigned seed;
    int pause_ms;
    int max_ops;
    int64_t max_ms;
    atomic_int run;  /* 1 writing, 0 pause */
    atomic_int idle; /* 1 while paused (no request in flight) */
    atomic_int stop;
    cc_wstats_t st;  /* read after join, or while idle */
    pthread_t t;
} cc_writer_t;

int cc_writer_start(cc_writer_t *w);
/* Pause (bounded wait until idle: 1 if idle). */
int cc_writer_pause(cc_writer_t *w, int timeout_ms);
void cc_writer_resume(cc_writer_t *w);
void cc_writer_stop(cc_writer_t *w);

#endif

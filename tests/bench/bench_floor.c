/* zkr_bench: the raw ZooKeeper C client floor.  `floor` is what any lock
 * cycle must cost at least: create an EPHEMERAL_SEQUENTIAL node, delete it,
 * back to back.  `floor2` lists the lock directory in between (what a
 * recipe that must look at its queue costs at least).  No mutual exclusion
 * here: it is the request cost only.  A multi-lock does every part's
 * create (and list) in order, then every delete. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <zookeeper/zookeeper.h>

#include "tests/bench/bench.h"

static void quiet_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)zh, (void)type, (void)state, (void)path, (void)ctx;
}

static void *floor_session_open(const bench_cfg_t *cfg, int i)
{
    (void)i;
    zoo_set_debug_level((ZooLogLevel)0);
    zhandle_t *zh = zookeeper_init(cfg->hosts, quiet_watcher, 20000, NULL, NULL, 0);
    if (!zh)
        return NULL;
    for (int k = 0; k < 1500 && zoo_state(zh) != ZOO_CONNECTED_STATE; k++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (zoo_state(zh) != ZOO_CONNECTED_STATE) {
        zookeeper_close(zh);
        return NULL;
    }
    return zh;
}

static void floor_session_close(void *s)
{
    zookeeper_close(s);
}

/* create `path` and its parents as persistent nodes (existing ones are fine) */
static int ensure_path(zhandle_t *zh, const char *path)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            int rc = zoo_create(zh, buf, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
            if (rc != ZOK && rc != ZNODEEXISTS)
                return rc;
            *p = c;
            if (c == '\0')
                return ZOK;
        }
    }
}

typedef struct floor_thread {
    zhandle_t *zh;
    int list, nparts;
    char **dirs;     /* one lock directory per part */
    char **prefix;   /* dir + "/lock-" */
    char (*node)[512];
} floor_thread_t;

static void floor_thread_fini(void *p)
{
    floor_thread_t *f = p;
    if (!f)
        return;
    for (int i = 0; i < f->nparts; i++) {
        free(f->dirs[i]);
        free(f->prefix[i]);
    }
    free(f->dirs);
    free(f->prefix);
    free(f->node);
    free(f);
}

static void *floor_thread_init_any(const bench_cfg_t *cfg, void *session, int t, int list)
{
    floor_thread_t *f = calloc(1, sizeof *f);
    int n = cfg->kind == BK_MULTI ? cfg->multi : 1;
    if (!f)
        return NULL;
    f->zh = session;
    f->list = list;
    f->dirs = calloc((size_t)n, sizeof *f->dirs);
    f->prefix = calloc((size_t)n, sizeof *f->prefix);
    f->node = calloc((size_t)n, sizeof *f->node);
    if (!f->dirs || !f->prefix || !f->node) {
        floor_thread_fini(f);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        f->dirs[i] = bench_lock_path(cfg, t, cfg->kind == BK_MULTI ? i : -1);
        f->prefix[i] = malloc(strlen(f->dirs[i]) + 8);
        f->nparts++;
        if (!f->prefix[i]) {
            floor_thread_fini(f);
            return NULL;
        }
        sprintf(f->prefix[i], "%s/lock-", f->dirs[i]);
        int rc = ensure_path(f->zh, f->dirs[i]);
        if (rc != ZOK) {
            fprintf(stderr, "zkr_bench: floor: create %s: %s\n", f->dirs[i], zerror(rc));
            floor_thread_fini(f);
            return NULL;
        }
    }
    return f;
}

static void *floor_thread_init(const bench_cfg_t *cfg, void *session, int t)
{
    return floor_thread_init_any(cfg, session, t, 0);
}

static void *floor2_thread_init(const bench_cfg_t *cfg, void *session, int t)
{
    return floor_thread_init_any(cfg, session, t, 1);
}

static int floor_acquire(void *p, int write_op)
{
    (void)write_op;
    floor_thread_t *f = p;
    for (int i = 0; i < f->nparts; i++) {
        int rc = zoo_create(f->zh, f->prefix[i], NULL, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL_SEQUENTIAL,
                            f->node[i], (int)sizeof f->node[i]);
        if (rc != ZOK) {
            fprintf(stderr, "zkr_bench: floor: create: %s\n", zerror(rc));
            return -1;
        }
        if (f->list) {
            struct String_vector sv;
            rc = zoo_get_children(f->zh, f->dirs[i], 0, &sv);
            if (rc != ZOK) {
                fprintf(stderr, "zkr_bench: floor: list: %s\n", zerror(rc));
                return -1;
            }
            deallocate_String_vector(&sv);
        }
    }
    return 0;
}

static int floor_release(void *p, int write_op)
{
    (void)write_op;
    floor_thread_t *f = p;
    for (int i = f->nparts - 1; i >= 0; i--) {
        int rc = zoo_delete(f->zh, f->node[i], -1);
        if (rc != ZOK) {
            fprintf(stderr, "zkr_bench: floor: delete: %s\n", zerror(rc));
            return -1;
        }
    }
    return 0;
}

const bench_impl_t bench_impl_floor = {
    "floor", floor_session_open, floor_session_close, floor_thread_init, floor_thread_fini,
    floor_acquire, floor_release,
};
const bench_impl_t bench_impl_floor2 = {
    "floor2", floor_session_open, floor_session_close, floor2_thread_init, floor_thread_fini,
    floor_acquire, floor_release,
};

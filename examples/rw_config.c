/* rw_config: a shared configuration guarded by a distributed read/write lock.
 *
 *   rw_config [HOSTS] [--readers N] [--seconds S] [--path /zkr-demo/rw-config]
 *   rw_config --help
 *
 * HOSTS defaults to $ZKR_HOSTS, then 127.0.0.1:2181.  The configuration
 * lives in ZooKeeper as two data nodes that must always be equal:
 *
 *   <path>/config/a    "generation N"
 *   <path>/config/b    "generation N"
 *   <path>/lock        the zkr_rwlock every thread uses
 *
 * N reader threads read a, pause, then read b, under the read lock, and
 * check they saw the same generation (a torn read would show a != b).  One
 * writer thread now and then rewrites the configuration in two steps (a,
 * pause, b) under the write lock.  Readers hold the lock together; the
 * writer holds it alone.  At the end the program prints the counts and
 * checks: no torn read, at least one write, readers overlapped, no lock
 * node left behind, and prints "CHECK PASSED: ..." (exit 0) or "CHECK
 * FAILED: ..." (exit 1).
 *
 * The configuration is read and written on the lock client's own session,
 * inside functions given to zkr_client_with_handle: no second ZooKeeper
 * session.  A read or a write that fails (for the connection or the session
 * too) is reported and counted as an error, never as done. */
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <zookeeper/zookeeper.h>
#include <zkr/zkr.h>

#include "exdata.h"

#define MAX_READERS 64
#define LOCK_TIMEOUT_MS 10000

static const char *hosts;
static int nreaders = 8;
static int seconds = 3;
static const char *base = "/zkr-demo/rw-config";

static char config_dir[512], lock_dir[512], path_a[520], path_b[520];

static zkr_client_t *client;
static zkr_rwlock_t *rw;

static atomic_int stop;
static atomic_int readers_inside;
static atomic_int writers_inside;
static atomic_int max_readers;
static atomic_int reads;
static atomic_int writes;
static atomic_int torn;
static atomic_int exclusion_violations;
static atomic_int errors;

/* ---- the data nodes ---------------------------------------------------------- */

/* Every data call runs in a zkr_handle_fn on the client's session.  The
 * functions return ZKR_OK and leave ZooKeeper's codes in their context, so
 * that they cannot be mistaken for zkr_client_with_handle's own codes. */

/* Read a node's data as a string.  Returns ZOK or a ZooKeeper error. */
static int get_text(zhandle_t *zh, const char *path, char *buf, int cap)
{
    int len = cap - 1;
    int rc = zoo_get(zh, path, 0, buf, &len, NULL);
    if (rc != ZOK)
        return rc;
    buf[len < 0 ? 0 : len] = '\0';
    return ZOK;
}

static int set_text(zhandle_t *zh, const char *path, const char *text)
{
    return zoo_set(zh, path, text, (int)strlen(text), -1);
}

/* Both halves of the configuration, a pause in between (a writer would
 * tear the config there), or both written, a pause in between (the two
 * halves are inconsistent for a while). */
typedef struct halves {
    char a[64], b[64];
    int pause_ms;
    int za, zb; /* the ZooKeeper codes */
} halves_t;

static int read_fn(zhandle_t *zh, int64_t session_id, void *ctx)
{
    (void)session_id;
    halves_t *h = ctx;
    h->za = get_text(zh, path_a, h->a, sizeof h->a);
    ex_sleep_ms(h->pause_ms);
    h->zb = get_text(zh, path_b, h->b, sizeof h->b);
    return ZKR_OK;
}

static int write_fn(zhandle_t *zh, int64_t session_id, void *ctx)
{
    (void)session_id;
    halves_t *h = ctx;
    h->za = set_text(zh, path_a, h->a);
    ex_sleep_ms(h->pause_ms);
    h->zb = set_text(zh, path_b, h->b);
    return ZKR_OK;
}

/* Run fn(h) on the client's session; the first ZooKeeper error, or the
 * library's as ZCLOSING (the client is closing), or ZOK. */
static int on_session(zkr_handle_fn fn, halves_t *h)
{
    h->za = h->zb = ZCLOSING;
    int rc = zkr_client_with_handle(client, fn, h);
    if (rc != ZKR_OK)
        return ZCLOSING;
    return h->za != ZOK ? h->za : h->zb;
}

/* A fresh configuration, "generation 0" in both halves; ctx: the int
 * ZooKeeper code. */
static int setup_fn(zhandle_t *zh, int64_t session_id, void *ctx)
{
    (void)session_id;
    int zrc = ex_delete_tree(zh, config_dir);
    if (zrc == ZOK)
        zrc = ex_create_path(zh, path_a, "generation 0");
    if (zrc == ZOK || zrc == ZNODEEXISTS)
        zrc = ex_create_path(zh, path_b, "generation 0");
    if (zrc == ZNODEEXISTS)
        zrc = ZOK;
    *(int *)ctx = zrc;
    return ZKR_OK;
}

/* After the run: the configuration (into h) and how many lock nodes are
 * left (-1 if unknown); then everything under the base path is deleted. */
typedef struct final {
    halves_t h;
    int left;
} final_t;

static int final_fn(zhandle_t *zh, int64_t session_id, void *ctx)
{
    final_t *f = ctx;
    f->h.pause_ms = 0;
    read_fn(zh, session_id, &f->h);
    struct String_vector kids = {0, NULL};
    int zrc = zoo_get_children(zh, lock_dir, 0, &kids);
    f->left = zrc == ZOK ? kids.count : (zrc == ZNONODE ? 0 : -1);
    deallocate_String_vector(&kids);
    return ZKR_OK;
}

/* ---- threads ---------------------------------------------------------------------- */

static void note_max(atomic_int *max, int v)
{
    int cur = atomic_load(max);
    while (v > cur && !atomic_compare_exchange_weak(max, &cur, v)) {
    }
}

static void *reader_main(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg * 2654435761u;
    int id = (int)(uintptr_t)arg;
    while (!atomic_load(&stop)) {
        int rc = zkr_rwlock_read_acquire(rw, LOCK_TIMEOUT_MS);
        if (rc != ZKR_OK) {
            fprintf(stderr, "reader %d: read_acquire: %s\n", id, zkr_strerror(rc));
            atomic_fetch_add(&errors, 1);
            continue;
        }
        note_max(&max_readers, atomic_fetch_add(&readers_inside, 1) + 1);
        if (atomic_load(&writers_inside) != 0)
            atomic_fetch_add(&exclusion_violations, 1);
        halves_t h = {.pause_ms = 1 + (int)(rand_r(&seed) % 3)}; /* a writer would tear the config here */
        int zrc = on_session(read_fn, &h);
        if (zrc != ZOK) {
            fprintf(stderr, "reader %d: get: %s\n", id, zerror(zrc));
            atomic_fetch_add(&errors, 1);
        } else if (strcmp(h.a, h.b) != 0) {
            fprintf(stderr, "reader %d: TORN config: a=\"%s\" b=\"%s\"\n", id, h.a, h.b);
            atomic_fetch_add(&torn, 1);
        }
        atomic_fetch_sub(&readers_inside, 1);
        if ((rc = zkr_rwlock_read_release(rw)) != ZKR_OK) {
            fprintf(stderr, "reader %d: read_release: %s\n", id, zkr_strerror(rc));
            atomic_fetch_add(&errors, 1);
        }
        atomic_fetch_add(&reads, 1);
        ex_sleep_ms((int)(rand_r(&seed) % 3));
    }
    return NULL;
}

static void *writer_main(void *arg)
{
    (void)arg;
    int generation = 0;
    while (!atomic_load(&stop)) {
        ex_sleep_ms(150);
        int rc = zkr_rwlock_write_acquire(rw, LOCK_TIMEOUT_MS);
        if (rc != ZKR_OK) {
            fprintf(stderr, "writer: write_acquire: %s\n", zkr_strerror(rc));
            atomic_fetch_add(&errors, 1);
            continue;
        }
        atomic_fetch_add(&writers_inside, 1);
        if (atomic_load(&readers_inside) != 0)
            atomic_fetch_add(&exclusion_violations, 1);
        int64_t token = 0;
        zkr_rwlock_write_fencing_token(rw, &token);
        halves_t h = {.pause_ms = 5}; /* the two halves are inconsistent for a while */
        snprintf(h.a, sizeof h.a, "generation %d", ++generation);
        snprintf(h.b, sizeof h.b, "%s", h.a);
        int zrc = on_session(write_fn, &h);
        if (zrc != ZOK) {
            fprintf(stderr, "writer: set: %s\n", zerror(zrc));
            atomic_fetch_add(&errors, 1);
        } else {
            printf("writer: wrote \"%s\" (fencing token %lld)\n", h.a, (long long)token);
        }
        atomic_fetch_sub(&writers_inside, 1);
        if ((rc = zkr_rwlock_write_release(rw)) != ZKR_OK) {
            fprintf(stderr, "writer: write_release: %s\n", zkr_strerror(rc));
            atomic_fetch_add(&errors, 1);
        }
        atomic_fetch_add(&writes, 1);
    }
    return NULL;
}

/* ---- main ------------------------------------------------------------------------------ */

static const char usage_text[] =
    "usage: rw_config [HOSTS] [--readers N] [--seconds S] [--path PATH]\n"
    "\n"
    "N reader threads and one writer share a configuration kept in ZooKeeper\n"
    "under a distributed read/write lock for S seconds; check that no read was\n"
    "torn, readers overlapped, the writer was alone and no lock node is left.\n"
    "\n"
    "  HOSTS              ZooKeeper connection string (default $ZKR_HOSTS, then\n"
    "                     127.0.0.1:2181)\n"
    "  -r, --readers N    reader threads, 2..64 (default 8)\n"
    "  -s, --seconds S    how long to run, 1..3600 (default 3)\n"
    "      --path PATH    where the configuration and the lock live\n"
    "                     (default /zkr-demo/rw-config)\n"
    "  -h, --help         this text\n";

static int parse_args(int argc, char **argv)
{
    static const struct option opts[] = {
        {"readers", required_argument, NULL, 'r'}, {"seconds", required_argument, NULL, 's'},
        {"path", required_argument, NULL, 'P'},    {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int o, bad = 0;
    while ((o = getopt_long(argc, argv, "r:s:h", opts, NULL)) != -1) {
        switch (o) {
        case 'r': bad |= ex_int_arg("rw_config", "readers", optarg, 2, MAX_READERS, &nreaders); break;
        case 's': bad |= ex_int_arg("rw_config", "seconds", optarg, 1, 3600, &seconds); break;
        case 'P': base = optarg; break;
        case 'h': return ex_usage(usage_text, 1);
        default: bad = -1; break;
        }
    }
    return ex_args_done(bad, argc, argv, &hosts, base, 400, usage_text);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (parse_args(argc, argv) != 0)
        return 2;
    snprintf(config_dir, sizeof config_dir, "%s/config", base);
    snprintf(path_a, sizeof path_a, "%s/a", config_dir);
    snprintf(path_b, sizeof path_b, "%s/b", config_dir);
    snprintf(lock_dir, sizeof lock_dir, "%s/lock", base);

    printf("rw_config: %s, %d readers, 1 writer, %d s, config %s/{a,b}\n", hosts, nreaders, seconds, config_dir);
    zoo_set_debug_level(0); /* keep the ZooKeeper client's log quiet */
    if (!(client = ex_client_open("rw_config", hosts)))
        return 1;
    int rc, zrc = ZCLOSING;
    if ((rc = zkr_client_with_handle(client, setup_fn, &zrc)) != ZKR_OK || zrc != ZOK) {
        fprintf(stderr, "rw_config: cannot set up %s: %s\n", config_dir,
                rc != ZKR_OK ? zkr_strerror(rc) : zerror(zrc));
        zkr_client_close(client);
        return 1;
    }
    /* One lock object for every thread: holds are per thread. */
    rc = zkr_rwlock_new(&rw, client, lock_dir);
    if (rc != ZKR_OK) {
        fprintf(stderr, "rw_config: zkr_rwlock_new: %s\n", zkr_strerror(rc));
        zkr_client_close(client);
        return 1;
    }

    pthread_t rt[MAX_READERS], wt;
    int started = 0;
    for (; started < nreaders; started++)
        if (pthread_create(&rt[started], NULL, reader_main, (void *)(uintptr_t)(started + 1)) != 0)
            break;
    int writer_ok = pthread_create(&wt, NULL, writer_main, NULL) == 0;
    if (started < nreaders || !writer_ok) {
        fprintf(stderr, "rw_config: cannot start threads\n");
        atomic_fetch_add(&errors, 1);
    }
    for (int s = 0; s < seconds * 10; s++)
        ex_sleep_ms(100);
    atomic_store(&stop, 1);
    for (int k = 0; k < started; k++)
        pthread_join(rt[k], NULL);
    if (writer_ok)
        pthread_join(wt, NULL);

    /* After the run: the configuration is whole, and no lock node is left. */
    final_t f = {.h = {.a = "", .b = "", .za = ZCLOSING, .zb = ZCLOSING}, .left = -1};
    zkr_client_with_handle(client, final_fn, &f); /* on failure f says so */
    int final_ok = f.h.za == ZOK && f.h.zb == ZOK && strcmp(f.h.a, f.h.b) == 0;
    int left = f.left;
    zkr_client_with_handle(client, ex_delete_tree_fn, (void *)base);

    zkr_rwlock_free(rw);
    zkr_client_close(client);

    printf("final config: a=\"%s\" b=\"%s\"\n", f.h.a, f.h.b);
    printf("reads: %d, writes: %d, max concurrent readers: %d, torn reads: %d, "
           "exclusion violations: %d, errors: %d, lock nodes left: %d\n",
           atomic_load(&reads), atomic_load(&writes), atomic_load(&max_readers), atomic_load(&torn),
           atomic_load(&exclusion_violations), atomic_load(&errors), left);
    int ok = atomic_load(&torn) == 0 && atomic_load(&exclusion_violations) == 0 && atomic_load(&errors) == 0 &&
             atomic_load(&writes) >= 1 && atomic_load(&max_readers) >= 2 && final_ok && left == 0;
    return ex_check(ok, "no torn read, at least one write, readers overlapped, writer alone, no lock node left");
}

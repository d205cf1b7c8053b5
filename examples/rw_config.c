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
 * FAILED: ..." (exit 1). */
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

static zhandle_t *data_zh;
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

/* Read a node's data as a string.  Returns ZOK or a ZooKeeper error. */
static int get_text(const char *path, char *buf, int cap)
{
    int len = cap - 1;
    int rc = zoo_get(data_zh, path, 0, buf, &len, NULL);
    if (rc != ZOK)
        return rc;
    buf[len < 0 ? 0 : len] = '\0';
    return ZOK;
}

static int set_text(const char *path, const char *text)
{
    return zoo_set(data_zh, path, text, (int)strlen(text), -1);
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
        char a[64], b[64];
        int za = get_text(path_a, a, sizeof a);
        ex_sleep_ms(1 + (int)(rand_r(&seed) % 3)); /* a writer would tear the config here */
        int zb = get_text(path_b, b, sizeof b);
        if (za != ZOK || zb != ZOK) {
            fprintf(stderr, "reader %d: get: %s\n", id, zerror(za != ZOK ? za : zb));
            atomic_fetch_add(&errors, 1);
        } else if (strcmp(a, b) != 0) {
            fprintf(stderr, "reader %d: TORN config: a=\"%s\" b=\"%s\"\n", id, a, b);
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
        char text[64];
        snprintf(text, sizeof text, "generation %d", ++generation);
        int za = set_text(path_a, text);
        ex_sleep_ms(5); /* the two halves are inconsistent for a while */
        int zb = set_text(path_b, text);
        if (za != ZOK || zb != ZOK) {
            fprintf(stderr, "writer: set: %s\n", zerror(za != ZOK ? za : zb));
            atomic_fetch_add(&errors, 1);
        } else {
            printf("writer: wrote \"%s\" (fencing token %lld)\n", text, (long long)token);
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
    data_zh = ex_data_connect("rw_config", hosts);
    if (!data_zh)
        return 1;
    int zrc = ex_delete_tree(data_zh, config_dir);
    if (zrc == ZOK)
        zrc = ex_create_path(data_zh, path_a, "generation 0");
    if (zrc == ZOK || zrc == ZNODEEXISTS)
        zrc = ex_create_path(data_zh, path_b, "generation 0");
    if (zrc == ZNODEEXISTS)
        zrc = ZOK;
    if (zrc != ZOK) {
        fprintf(stderr, "rw_config: cannot set up %s: %s\n", config_dir, zerror(zrc));
        zookeeper_close(data_zh);
        return 1;
    }

    zkr_client_options_t opt;
    zkr_client_options_init(&opt);
    opt.zk_log_level = 0;
    zkr_client_t *client = NULL;
    int rc = zkr_client_open(&client, hosts, &opt);
    if (rc != ZKR_OK) {
        fprintf(stderr, "rw_config: zkr_client_open: %s\n", zkr_strerror(rc));
        zookeeper_close(data_zh);
        return 1;
    }
    /* One lock object for every thread: holds are per thread. */
    rc = zkr_rwlock_new(&rw, client, lock_dir);
    if (rc != ZKR_OK) {
        fprintf(stderr, "rw_config: zkr_rwlock_new: %s\n", zkr_strerror(rc));
        zkr_client_close(client);
        zookeeper_close(data_zh);
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
    char a[64] = "", b[64] = "";
    int final_ok = get_text(path_a, a, sizeof a) == ZOK && get_text(path_b, b, sizeof b) == ZOK &&
                   strcmp(a, b) == 0;
    struct String_vector kids = {0, NULL};
    zrc = zoo_get_children(data_zh, lock_dir, 0, &kids);
    int left = zrc == ZOK ? kids.count : (zrc == ZNONODE ? 0 : -1);
    deallocate_String_vector(&kids);

    zkr_rwlock_free(rw);
    zkr_client_close(client);
    ex_delete_tree(data_zh, base);
    zookeeper_close(data_zh);

    printf("final config: a=\"%s\" b=\"%s\"\n", a, b);
    printf("reads: %d, writes: %d, max concurrent readers: %d, torn reads: %d, "
           "exclusion violations: %d, errors: %d, lock nodes left: %d\n",
           atomic_load(&reads), atomic_load(&writes), atomic_load(&max_readers), atomic_load(&torn),
           atomic_load(&exclusion_violations), atomic_load(&errors), left);
    int ok = atomic_load(&torn) == 0 && atomic_load(&exclusion_violations) == 0 && atomic_load(&errors) == 0 &&
             atomic_load(&writes) >= 1 && atomic_load(&max_readers) >= 2 && final_ok && left == 0;
    return ex_check(ok, "no torn read, at least one write, readers overlapped, writer alone, no lock node left");
}

/* ticket_seller: the classic "don't oversell the last ticket" program.
 *
 *   ticket_seller [HOSTS] [--threads N] [--procs P] [--tickets T]
 *                 [--path /zkr-demo/tickets] [--lock mutex|semaphore-mutex]
 *   ticket_seller --help
 *
 * HOSTS defaults to $ZKR_HOSTS, then 127.0.0.1:2181.  The tickets live in
 * ZooKeeper, so P processes (forked here) x N seller threads all sell from
 * one stock:
 *
 *   <path>/counter       how many tickets are sold so far (decimal text)
 *   <path>/sold/ticket-K one node per ticket sold, data = who sold it
 *   <path>/lock          the distributed lock every seller takes
 *
 * Each seller: take the lock; read the counter; if tickets are left, create
 * sold/ticket-(counter+1) and write counter+1 (with the version it read);
 * release.  A second sale of the same ticket would fail to create its node,
 * and a write by anyone else in between would fail the version check: both
 * are counted as oversells.  At the end the program checks that exactly T
 * distinct tickets were sold, none twice, and prints "CHECK PASSED: ..." (exit
 * 0) or "CHECK FAILED: ..." (exit 1). */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <zookeeper/zookeeper.h>
#include <zkr/zkr.h>

#include "exdata.h"

typedef struct config {
    const char *hosts;
    int threads;
    int procs;
    int tickets;
    const char *path;
    int semaphore_mutex;
} config_t;

static config_t cfg = {NULL, 30, 1, 100, "/zkr-demo/tickets", 0};

static char counter_path[512], sold_path[512], lock_path[512];

/* Per process. */
static zhandle_t *data_zh;
static zkr_client_t *client;
static zkr_mutex_t *shared_mutex;
static atomic_int inside;
static atomic_int violations;
static atomic_int sold_here;

/* ---- the ZooKeeper data the tickets live in ------------------------------- */

/* A fresh stock: counter 0, no ticket sold. */
static int reset_stock(void)
{
    int rc = ex_delete_tree(data_zh, cfg.path);
    if (rc == ZOK)
        rc = ex_create_path(data_zh, cfg.path, "");
    if (rc == ZNODEEXISTS)
        rc = ZOK;
    if (rc == ZOK)
        rc = zoo_create(data_zh, counter_path, "0", 1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    if (rc == ZOK)
        rc = zoo_create(data_zh, sold_path, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    if (rc != ZOK)
        fprintf(stderr, "ticket_seller: cannot set up %s: %s\n", cfg.path, zerror(rc));
    return rc;
}

/* ---- selling ------------------------------------------------------------------ */

typedef struct seller {
    int proc;
    int id;
    int sold;
    int failed;
    zkr_semaphore_mutex_t *smutex;
} seller_t;

static int lock_acquire(seller_t *s)
{
    if (s->smutex)
        return zkr_semaphore_mutex_acquire(s->smutex, 60000);
    return zkr_mutex_acquire(shared_mutex, 60000);
}

static int lock_release(seller_t *s)
{
    if (s->smutex)
        return zkr_semaphore_mutex_release(s->smutex);
    return zkr_mutex_release(shared_mutex);
}

static int64_t lock_token(seller_t *s)
{
    int64_t t = 0;
    if (s->smutex)
        zkr_semaphore_mutex_fencing_token(s->smutex, &t);
    else
        zkr_mutex_fencing_token(shared_mutex, &t);
    return t;
}

/* Sell one ticket under the lock.  Returns 1 sold, 0 none left, -1 error. */
static int sell_one(seller_t *s)
{
    int rc = lock_acquire(s);
    if (rc != ZKR_OK) {
        fprintf(stderr, "seller %d.%02d: acquire: %s\n", s->proc, s->id, zkr_strerror(rc));
        return -1;
    }
    if (atomic_fetch_add(&inside, 1) != 0) {
        fprintf(stderr, "seller %d.%02d: another seller of this process is inside!\n", s->proc, s->id);
        atomic_fetch_add(&violations, 1);
    }
    int result = 0;
    char buf[32];
    int len = (int)sizeof buf - 1;
    struct Stat st;
    int zrc = zoo_get(data_zh, counter_path, 0, buf, &len, &st);
    if (zrc != ZOK || len < 0) {
        fprintf(stderr, "seller %d.%02d: read counter: %s\n", s->proc, s->id, zerror(zrc));
        result = -1;
    } else {
        buf[len] = '\0';
        int sold = atoi(buf);
        if (sold < cfg.tickets) {
            int ticket = sold + 1;
            int64_t token = lock_token(s);
            char node[600], who[128];
            snprintf(node, sizeof node, "%s/ticket-%04d", sold_path, ticket);
            int wl = snprintf(who, sizeof who, "seller %d.%02d pid %d token %lld", s->proc, s->id,
                              (int)getpid(), (long long)token);
            zrc = zoo_create(data_zh, node, who, wl, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
            if (zrc == ZNODEEXISTS) {
                fprintf(stderr, "OVERSOLD: ticket %d sold twice (seller %d.%02d)\n", ticket, s->proc, s->id);
                atomic_fetch_add(&violations, 1);
                result = -1;
            } else if (zrc != ZOK) {
                fprintf(stderr, "seller %d.%02d: create %s: %s\n", s->proc, s->id, node, zerror(zrc));
                result = -1;
            } else {
                int nl = snprintf(buf, sizeof buf, "%d", ticket);
                zrc = zoo_set(data_zh, counter_path, buf, nl, st.version);
                if (zrc == ZBADVERSION) {
                    fprintf(stderr, "OVERSOLD: counter changed under the lock (seller %d.%02d)\n", s->proc,
                            s->id);
                    atomic_fetch_add(&violations, 1);
                    result = -1;
                } else if (zrc != ZOK) {
                    fprintf(stderr, "seller %d.%02d: write counter: %s\n", s->proc, s->id, zerror(zrc));
                    result = -1;
                } else {
                    printf("ticket %4d sold by seller %d.%02d (fencing token %lld)\n", ticket, s->proc, s->id,
                           (long long)token);
                    result = 1;
                }
            }
        }
    }
    atomic_fetch_sub(&inside, 1);
    rc = lock_release(s);
    if (rc != ZKR_OK) {
        fprintf(stderr, "seller %d.%02d: release: %s\n", s->proc, s->id, zkr_strerror(rc));
        result = -1;
    }
    return result;
}

static void *seller_main(void *arg)
{
    seller_t *s = arg;
    if (cfg.semaphore_mutex && zkr_semaphore_mutex_new(&s->smutex, client, lock_path) != ZKR_OK) {
        s->failed = 1;
        return NULL;
    }
    for (;;) {
        int r = sell_one(s);
        if (r < 0) {
            s->failed = 1;
            break;
        }
        if (r == 0)
            break;
        s->sold++;
        atomic_fetch_add(&sold_here, 1);
    }
    zkr_semaphore_mutex_free(s->smutex);
    return NULL;
}

/* One selling process: its own session, cfg.threads sellers.  Returns the
 * process exit status. */
static int run_sellers(int proc)
{
    zkr_client_options_t opt;
    zkr_client_options_init(&opt);
    opt.zk_log_level = 0;
    int rc = zkr_client_open(&client, cfg.hosts, &opt);
    if (rc != ZKR_OK) {
        fprintf(stderr, "ticket_seller: open %s: %s\n", cfg.hosts, zkr_strerror(rc));
        return 2;
    }
    if (!data_zh && !(data_zh = ex_data_connect("ticket_seller", cfg.hosts))) {
        zkr_client_close(client);
        return 2;
    }
    if (!cfg.semaphore_mutex && zkr_mutex_new(&shared_mutex, client, lock_path) != ZKR_OK) {
        zkr_client_close(client);
        return 2;
    }
    seller_t *sellers = calloc((size_t)cfg.threads, sizeof *sellers);
    pthread_t *tids = calloc((size_t)cfg.threads, sizeof *tids);
    if (!sellers || !tids) {
        free(sellers);
        free(tids);
        zkr_mutex_free(shared_mutex);
        zkr_client_close(client);
        return 2;
    }
    int started = 0;
    for (int i = 0; i < cfg.threads; i++) {
        sellers[i].proc = proc;
        sellers[i].id = i + 1;
        if (pthread_create(&tids[i], NULL, seller_main, &sellers[i]) != 0) {
            sellers[i].failed = 1;
            break;
        }
        started++;
    }
    int failed = started < cfg.threads;
    for (int i = 0; i < started; i++) {
        pthread_join(tids[i], NULL);
        failed |= sellers[i].failed;
    }
    printf("process %d (pid %d): %d tickets sold by %d sellers\n", proc, (int)getpid(), atomic_load(&sold_here),
           started);
    free(sellers);
    free(tids);
    zkr_mutex_free(shared_mutex);
    zkr_client_close(client);
    if (atomic_load(&violations) > 0)
        return 3;
    return failed ? 1 : 0;
}

/* ---- the final check ------------------------------------------------------------ */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int final_check(void)
{
    struct String_vector kids = {0, NULL};
    int zrc = zoo_get_children(data_zh, sold_path, 0, &kids);
    if (zrc != ZOK) {
        fprintf(stderr, "check: list %s: %s\n", sold_path, zerror(zrc));
        return 1;
    }
    int ok = 1;
    qsort(kids.data, (size_t)kids.count, sizeof *kids.data, cmp_str);
    if (kids.count != cfg.tickets) {
        fprintf(stderr, "check: %d tickets sold, expected %d\n", kids.count, cfg.tickets);
        ok = 0;
    }
    for (int i = 0; i < kids.count; i++) {
        char want[32];
        snprintf(want, sizeof want, "ticket-%04d", i + 1);
        if (strcmp(kids.data[i], want) != 0) {
            fprintf(stderr, "check: expected %s, found %s\n", want, kids.data[i]);
            ok = 0;
            break;
        }
    }
    deallocate_String_vector(&kids);
    char buf[32];
    int len = (int)sizeof buf - 1;
    zrc = zoo_get(data_zh, counter_path, 0, buf, &len, NULL);
    if (zrc != ZOK || len < 0) {
        fprintf(stderr, "check: read counter: %s\n", zerror(zrc));
        return 1;
    }
    buf[len] = '\0';
    if (atoi(buf) != cfg.tickets) {
        fprintf(stderr, "check: counter says %s, expected %d\n", buf, cfg.tickets);
        ok = 0;
    }
    /* No lock node may be left behind once every seller has closed (the
     * semaphore mutex keeps its nodes under lock/locks and lock/leases). */
    const char *dirs[2] = {"", NULL};
    if (cfg.semaphore_mutex) {
        dirs[0] = "/locks";
        dirs[1] = "/leases";
    }
    for (int d = 0; d < 2 && dirs[d]; d++) {
        char dir[600];
        snprintf(dir, sizeof dir, "%s%s", lock_path, dirs[d]);
        struct String_vector lk = {0, NULL};
        zrc = zoo_get_children(data_zh, dir, 0, &lk);
        if (zrc == ZOK) {
            if (lk.count != 0) {
                fprintf(stderr, "check: %d lock nodes left under %s\n", lk.count, dir);
                ok = 0;
            }
            deallocate_String_vector(&lk);
        }
    }
    return ok ? 0 : 1;
}

static const char usage_text[] =
    "usage: ticket_seller [HOSTS] [--threads N] [--procs P] [--tickets T] [--path PATH]\n"
    "                     [--lock mutex|semaphore-mutex]\n"
    "\n"
    "Sell T tickets from one stock kept in ZooKeeper with P processes x N seller\n"
    "threads, each sale under a distributed lock; check that exactly T distinct\n"
    "tickets were sold, none twice, and that no lock node is left.\n"
    "\n"
    "  HOSTS              ZooKeeper connection string (default $ZKR_HOSTS, then\n"
    "                     127.0.0.1:2181)\n"
    "  -t, --threads N    seller threads per process, 1..1000 (default 30)\n"
    "  -p, --procs P      processes, 1..64 (default 1)\n"
    "  -n, --tickets T    tickets to sell, 0..9999 (default 100)\n"
    "      --path PATH    where the stock and the lock live (default /zkr-demo/tickets)\n"
    "      --lock KIND    mutex (reentrant, default) or semaphore-mutex (non-reentrant)\n"
    "  -h, --help         this text\n";

static int parse_args(int argc, char **argv)
{
    static const struct option opts[] = {
        {"threads", required_argument, NULL, 't'}, {"procs", required_argument, NULL, 'p'},
        {"tickets", required_argument, NULL, 'n'}, {"path", required_argument, NULL, 'P'},
        {"lock", required_argument, NULL, 'l'},    {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int o, bad = 0;
    while ((o = getopt_long(argc, argv, "t:p:n:h", opts, NULL)) != -1) {
        switch (o) {
        case 't': bad |= ex_int_arg("ticket_seller", "threads", optarg, 1, 1000, &cfg.threads); break;
        case 'p': bad |= ex_int_arg("ticket_seller", "procs", optarg, 1, 64, &cfg.procs); break;
        case 'n': bad |= ex_int_arg("ticket_seller", "tickets", optarg, 0, 9999, &cfg.tickets); break;
        case 'P': cfg.path = optarg; break;
        case 'l':
            if (strcmp(optarg, "mutex") == 0 || strcmp(optarg, "semaphore-mutex") == 0)
                cfg.semaphore_mutex = strcmp(optarg, "semaphore-mutex") == 0;
            else
                bad = -1;
            break;
        case 'h': return ex_usage(usage_text, 1);
        default: bad = -1; break;
        }
    }
    return ex_args_done(bad, argc, argv, &cfg.hosts, cfg.path, 400, usage_text);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (parse_args(argc, argv) != 0)
        return 2;
    zoo_set_debug_level((ZooLogLevel)0);
    snprintf(counter_path, sizeof counter_path, "%s/counter", cfg.path);
    snprintf(sold_path, sizeof sold_path, "%s/sold", cfg.path);
    snprintf(lock_path, sizeof lock_path, "%s/lock", cfg.path);

    data_zh = ex_data_connect("ticket_seller", cfg.hosts);
    if (!data_zh || reset_stock() != ZOK)
        return 2;
    printf("selling %d tickets with %d process(es) x %d seller threads, lock %s (%s)\n", cfg.tickets, cfg.procs,
           cfg.threads, lock_path, cfg.semaphore_mutex ? "non-reentrant semaphore mutex" : "reentrant mutex");

    int status = 0;
    if (cfg.procs == 1) {
        status = run_sellers(1);
    } else {
        /* Children open their own connections: fork before any ZooKeeper
         * thread exists in them. */
        zookeeper_close(data_zh);
        data_zh = NULL;
        pid_t *pids = calloc((size_t)cfg.procs, sizeof *pids);
        if (!pids)
            return 2;
        for (int p = 0; p < cfg.procs; p++) {
            pids[p] = fork();
            if (pids[p] == 0)
                _exit(run_sellers(p + 1));
            if (pids[p] < 0) {
                perror("fork");
                status = 2;
            }
        }
        for (int p = 0; p < cfg.procs; p++) {
            int st = 0;
            if (pids[p] > 0 && waitpid(pids[p], &st, 0) == pids[p] && (!WIFEXITED(st) || WEXITSTATUS(st) != 0)) {
                fprintf(stderr, "process %d failed (status %d)\n", p + 1, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
                status = 1;
            }
        }
        free(pids);
        data_zh = ex_data_connect("ticket_seller", cfg.hosts);
        if (!data_zh)
            return 2;
    }
    int check = final_check();
    zookeeper_close(data_zh);
    char what[128];
    snprintf(what, sizeof what, "exactly %d distinct tickets sold, none twice, no lock node left", cfg.tickets);
    return ex_check(status == 0 && check == 0, what);
}

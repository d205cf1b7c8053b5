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
 * sold/ticket-(counter+1) and write counter+1 (with the version it read),
 * both in one transaction; release.  A second sale of the same ticket would
 * fail to create its node, and a write by anyone else in between would fail
 * the version check: both are counted as oversells.  At the end the program
 * checks that exactly T distinct tickets were sold, none twice, and prints
 * "CHECK PASSED: ..." (exit 0) or "CHECK FAILED: ..." (exit 1).
 *
 * The data calls run on the lock client's own session, inside functions
 * given to zkr_client_with_handle: no second ZooKeeper session.  A sale
 * that fails for the connection or the session is tried again once the
 * client is connected (after LOST, on its new session); if the outcome of
 * its transaction is unknown, the next try first reads back whether the
 * ticket was sold, so that a sale is counted once and only if it was made. */
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
static zkr_client_t *client;
static zkr_mutex_t *shared_mutex;
static atomic_int inside;
static atomic_int violations;
static atomic_int sold_here;

/* ---- the ZooKeeper data the tickets live in ------------------------------- */

/* Every data call runs in a zkr_handle_fn on the client's session.  The
 * functions return ZKR_OK and leave ZooKeeper's code in their context, so
 * that it cannot be mistaken for zkr_client_with_handle's own ZKR_ECLOSED. */

/* The connection or the session failed: the call may be tried again once
 * the client is connected (a write's outcome may be unknown). */
static int zk_retryable(int zrc)
{
    return zrc == ZCONNECTIONLOSS || zrc == ZOPERATIONTIMEOUT || zrc == ZSESSIONEXPIRED ||
           zrc == ZSESSIONMOVED || zrc == ZINVALIDSTATE || zrc == ZCLOSING;
}

static zkr_client_t *open_client(void)
{
    zkr_client_options_t opt;
    zkr_client_options_init(&opt);
    opt.zk_log_level = 0;
    zkr_client_t *c = NULL;
    int rc = zkr_client_open(&c, cfg.hosts, &opt);
    if (rc != ZKR_OK) {
        fprintf(stderr, "ticket_seller: open %s: %s\n", cfg.hosts, zkr_strerror(rc));
        return NULL;
    }
    return c;
}

/* A fresh stock: counter 0, no ticket sold.  ctx: the int ZooKeeper code. */
static int reset_fn(zhandle_t *zh, int64_t session_id, void *ctx)
{
    (void)session_id;
    *(int *)ctx = ex_fresh_tree(zh, cfg.path, "counter", "sold");
    return ZKR_OK;
}

/* Run fn(ctx) on a client opened and closed here (the set-up and the
 * final check, outside the sellers' sessions).  0, or 1 after a message. */
static int with_own_client(zkr_handle_fn fn, void *ctx)
{
    zkr_client_t *c = open_client();
    if (!c)
        return 1;
    int rc = zkr_client_with_handle(c, fn, ctx);
    zkr_client_close(c);
    if (rc != ZKR_OK) {
        fprintf(stderr, "ticket_seller: %s\n", zkr_strerror(rc));
        return 1;
    }
    return 0;
}

/* ---- selling ------------------------------------------------------------------ */

typedef struct seller {
    int proc;
    int id;
    int sold;
    int failed;
    zkr_semaphore_mutex_t *smutex;
    /* A sale whose transaction's outcome is unknown (the connection failed
     * under it): its ticket (0: none), what it wrote and its token. */
    int pending;
    char pending_who[128];
    int64_t pending_token;
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

enum { SOLD, NONE_LEFT, OVERSOLD_TICKET, OVERSOLD_COUNTER, FAILED };

/* One sale, made by sale_fn under the lock. */
typedef struct sale {
    seller_t *s;
    int64_t token;   /* in: the lock's fencing token */
    int outcome;     /* out: SOLD ... FAILED */
    int ticket;      /* out: the ticket sold or tried */
    const char *op;  /* out, FAILED: the call that failed */
    char node[600];  /* out: the ticket's node */
    int zrc;         /* out, FAILED: its ZooKeeper code */
} sale_t;

static void ticket_node(char *node, size_t cap, int ticket)
{
    snprintf(node, cap, "%s/ticket-%04d", sold_path, ticket);
}

/* The sale itself, on the client's session (a zkr_handle_fn). */
static int sale_fn(zhandle_t *zh, int64_t session_id, void *ctx)
{
    (void)session_id;
    sale_t *sale = ctx;
    seller_t *s = sale->s;
    sale->outcome = FAILED;
    if (s->pending) {
        /* An earlier try may have sold its ticket: it did if the ticket's
         * node holds what it wrote (its transaction was all or nothing). */
        char data[128];
        int len = (int)sizeof data;
        ticket_node(sale->node, sizeof sale->node, s->pending);
        sale->ticket = s->pending;
        sale->op = "check ticket";
        sale->zrc = zoo_get(zh, sale->node, 0, data, &len, NULL);
        if (sale->zrc != ZOK && sale->zrc != ZNONODE)
            return ZKR_OK;
        s->pending = 0;
        if (sale->zrc == ZOK && len == (int)strlen(s->pending_who) && memcmp(data, s->pending_who, (size_t)len) == 0) {
            sale->token = s->pending_token;
            sale->outcome = SOLD;
            return ZKR_OK;
        }
        sale->ticket = 0; /* not sold by that try: sell as usual */
    }
    char buf[32];
    int len = (int)sizeof buf - 1;
    struct Stat st;
    sale->op = "read counter";
    sale->zrc = zoo_get(zh, counter_path, 0, buf, &len, &st);
    if (sale->zrc != ZOK)
        return ZKR_OK;
    buf[len < 0 ? 0 : len] = '\0';
    int sold = atoi(buf);
    if (sold >= cfg.tickets) {
        sale->outcome = NONE_LEFT;
        return ZKR_OK;
    }
    sale->ticket = sold + 1;
    ticket_node(sale->node, sizeof sale->node, sale->ticket);
    char who[128];
    int wl = snprintf(who, sizeof who, "seller %d.%02d pid %d token %lld", s->proc, s->id, (int)getpid(),
                      (long long)sale->token);
    int nl = snprintf(buf, sizeof buf, "%d", sale->ticket);
    zoo_op_t ops[2];
    zoo_op_result_t results[2];
    zoo_create_op_init(&ops[0], sale->node, who, wl, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    zoo_set_op_init(&ops[1], counter_path, buf, nl, st.version, NULL);
    sale->op = "sell";
    sale->zrc = zoo_multi(zh, 2, ops, results);
    if (sale->zrc == ZOK)
        sale->outcome = SOLD;
    else if (sale->zrc == ZNODEEXISTS)
        sale->outcome = OVERSOLD_TICKET;
    else if (sale->zrc == ZBADVERSION)
        sale->outcome = OVERSOLD_COUNTER;
    else if (zk_retryable(sale->zrc)) {
        s->pending = sale->ticket; /* sold or not: the next try finds out */
        snprintf(s->pending_who, sizeof s->pending_who, "%s", who);
        s->pending_token = sale->token;
    }
    return ZKR_OK;
}

#define RETRY 2

/* Sell one ticket under the lock.  Returns 1 sold, 0 none left, RETRY
 * (the connection or the session failed: nothing counted), -1 error. */
static int sell_one(seller_t *s)
{
    int rc = lock_acquire(s);
    if (rc == ZKR_ECONNLOSS || rc == ZKR_ESESSIONLOST)
        return RETRY;
    if (rc != ZKR_OK) {
        fprintf(stderr, "seller %d.%02d: acquire: %s\n", s->proc, s->id, zkr_strerror(rc));
        return -1;
    }
    if (atomic_fetch_add(&inside, 1) != 0) {
        fprintf(stderr, "seller %d.%02d: another seller of this process is inside!\n", s->proc, s->id);
        atomic_fetch_add(&violations, 1);
    }
    int result = -1;
    sale_t sale = {.s = s, .token = lock_token(s)};
    rc = zkr_client_with_handle(client, sale_fn, &sale);
    if (rc != ZKR_OK) {
        fprintf(stderr, "seller %d.%02d: %s\n", s->proc, s->id, zkr_strerror(rc));
    } else {
        switch (sale.outcome) {
        case SOLD:
            printf("ticket %4d sold by seller %d.%02d (fencing token %lld)\n", sale.ticket, s->proc, s->id,
                   (long long)sale.token);
            result = 1;
            break;
        case NONE_LEFT: result = 0; break;
        case OVERSOLD_TICKET:
            fprintf(stderr, "OVERSOLD: ticket %d sold twice (seller %d.%02d)\n", sale.ticket, s->proc, s->id);
            atomic_fetch_add(&violations, 1);
            break;
        case OVERSOLD_COUNTER:
            fprintf(stderr, "OVERSOLD: counter changed under the lock (seller %d.%02d)\n", s->proc, s->id);
            atomic_fetch_add(&violations, 1);
            break;
        default:
            fprintf(stderr, "seller %d.%02d: %s%s%s: %s%s\n", s->proc, s->id, sale.op, sale.ticket ? " " : "",
                    sale.ticket ? sale.node : "", zerror(sale.zrc), zk_retryable(sale.zrc) ? " (trying again)" : "");
            if (zk_retryable(sale.zrc))
                result = RETRY;
            break;
        }
    }
    atomic_fetch_sub(&inside, 1);
    rc = lock_release(s);
    if (rc != ZKR_OK && !(result == RETRY && rc == ZKR_ELOST)) {
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
    int tries = 0;
    for (;;) {
        int r = sell_one(s);
        if (r == RETRY) {
            /* Once connected again (after LOST: on the client's new
             * session), a bounded number of times in a row. */
            int rc = ++tries > 20 ? ZKR_ETIMEDOUT : zkr_client_wait_connected(client, 60000);
            if (rc != ZKR_OK) {
                fprintf(stderr, "seller %d.%02d: giving up: %s\n", s->proc, s->id, zkr_strerror(rc));
                s->failed = 1;
                break;
            }
            ex_sleep_ms(100);
            continue;
        }
        tries = 0;
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
    if (!(client = open_client()))
        return 2;
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

static int final_check(zhandle_t *zh)
{
    struct String_vector kids = {0, NULL};
    int zrc = zoo_get_children(zh, sold_path, 0, &kids);
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
    zrc = zoo_get(zh, counter_path, 0, buf, &len, NULL);
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
        zrc = zoo_get_children(zh, dir, 0, &lk);
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

/* final_check on the session of a client (a zkr_handle_fn); ctx: its int
 * result. */
static int check_fn(zhandle_t *zh, int64_t session_id, void *ctx)
{
    (void)session_id;
    *(int *)ctx = final_check(zh);
    return ZKR_OK;
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

    int zrc = ZOK;
    if (with_own_client(reset_fn, &zrc) != 0)
        return 2;
    if (zrc != ZOK) {
        fprintf(stderr, "ticket_seller: cannot set up %s: %s\n", cfg.path, zerror(zrc));
        return 2;
    }
    printf("selling %d tickets with %d process(es) x %d seller threads, lock %s (%s)\n", cfg.tickets, cfg.procs,
           cfg.threads, lock_path, cfg.semaphore_mutex ? "non-reentrant semaphore mutex" : "reentrant mutex");

    int status = 0;
    if (cfg.procs == 1) {
        status = run_sellers(1);
    } else {
        /* Children open their own connections: fork before any ZooKeeper
         * thread exists in them (the set-up's client is closed). */
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
    }
    int check = 1;
    if (with_own_client(check_fn, &check) != 0)
        check = 1;
    char what[128];
    snprintf(what, sizeof what, "exactly %d distinct tickets sold, none twice, no lock node left", cfg.tickets);
    return ex_check(status == 0 && check == 0, what);
}

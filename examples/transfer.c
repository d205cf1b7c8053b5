/* transfer: bank transfers between accounts, each under a multi-lock.
 *
 *   transfer [HOSTS] [--accounts N] [--threads T] [--transfers K]
 *            [--path /zkr-demo/bank]
 *   transfer --help
 *
 * HOSTS defaults to $ZKR_HOSTS, then 127.0.0.1:2181.  Every account is a
 * ZooKeeper node holding its balance (decimal text), and has a mutex of
 * its own:
 *
 *   <path>/accounts/acct-NN   the balance
 *   <path>/locks/acct-NN      the account's zkr_mutex
 *
 * T threads, each with its own client (its own session, as separate
 * processes would have), make K transfers of a random amount between two
 * random accounts.  A transfer takes a zkr_multilock of the two accounts'
 * mutexes, in one global order (sorted by lock path, so that two transfers
 * in opposite directions cannot deadlock), with a timeout; then reads both
 * balances, moves the money if the source can afford it, and writes both
 * back with the versions it read (a write by anyone else in between would
 * be caught).  At the end the program checks: the total is unchanged, no
 * balance is negative, no lock node is left, and no two transfers ever held
 * the same account at once, and prints "CHECK PASSED: ..." (exit 0) or
 * "CHECK FAILED: ..." (exit 1). */
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

#define MAX_ACCOUNTS 64
#define MAX_THREADS 64
#define INITIAL_BALANCE 1000
#define LOCK_TIMEOUT_MS 10000

static const char *hosts;
static int naccounts = 5;
static int nthreads = 6;
static int ntransfers = 25;
static const char *base = "/zkr-demo/bank";

static char acct_path[MAX_ACCOUNTS][256];
static char lock_path[MAX_ACCOUNTS][256];

static zhandle_t *data_zh;

/* In-process witness: an account held by two transfers at once. */
static atomic_int busy[MAX_ACCOUNTS];
static atomic_int violations;
static atomic_int done_transfers, skipped, timeouts, errors;
static atomic_llong moved;

/* ---- the data nodes ------------------------------------------------------------ */

/* Balance of account i and the version it was read at. */
static int get_balance(int i, long *balance, int *version)
{
    char buf[32];
    int len = (int)sizeof buf - 1;
    struct Stat st;
    int rc = zoo_get(data_zh, acct_path[i], 0, buf, &len, &st);
    if (rc != ZOK)
        return rc;
    buf[len < 0 ? 0 : len] = '\0';
    *balance = strtol(buf, NULL, 10);
    if (version)
        *version = st.version;
    return ZOK;
}

static int set_balance(int i, long balance, int version)
{
    char buf[32];
    int len = snprintf(buf, sizeof buf, "%ld", balance);
    return zoo_set(data_zh, acct_path[i], buf, len, version);
}

/* ---- transfers ------------------------------------------------------------------------ */

typedef struct teller {
    int id;
    unsigned seed;
    zkr_client_t *client;
    zkr_mutex_t *mutex[MAX_ACCOUNTS]; /* this teller's objects on every account lock */
    int made, skipped, timeouts;
} teller_t;

/* Move `amount` from account `from` to `to`, both held.  Returns 1 moved,
 * 0 not enough money, -1 error. */
static int move_money(teller_t *t, int from, int to, long amount)
{
    long bf, bt;
    int vf, vt;
    int rc = get_balance(from, &bf, &vf);
    if (rc == ZOK)
        rc = get_balance(to, &bt, &vt);
    if (rc != ZOK) {
        fprintf(stderr, "teller %d: get: %s\n", t->id, zerror(rc));
        return -1;
    }
    if (bf < amount)
        return 0;
    /* Version checks: under the locks nobody else may write in between. */
    rc = set_balance(from, bf - amount, vf);
    if (rc == ZOK)
        rc = set_balance(to, bt + amount, vt);
    if (rc == ZBADVERSION) {
        fprintf(stderr, "teller %d: VIOLATION: a balance changed under our lock\n", t->id);
        atomic_fetch_add(&violations, 1);
        return -1;
    }
    if (rc != ZOK) {
        fprintf(stderr, "teller %d: set: %s\n", t->id, zerror(rc));
        return -1;
    }
    return 1;
}

static int one_transfer(teller_t *t)
{
    int from = (int)(rand_r(&t->seed) % (unsigned)naccounts);
    int to = (int)(rand_r(&t->seed) % (unsigned)(naccounts - 1));
    if (to >= from)
        to++;
    long amount = 1 + (long)(rand_r(&t->seed) % 300);

    /* The two mutexes in the global order: sorted by lock path. */
    int first = strcmp(lock_path[from], lock_path[to]) < 0 ? from : to;
    int second = first == from ? to : from;
    zkr_lock_ref_t parts[2] = {zkr_mutex_ref(t->mutex[first]), zkr_mutex_ref(t->mutex[second])};
    zkr_multilock_t *ml = NULL;
    int rc = zkr_multilock_new(&ml, parts, 2);
    if (rc != ZKR_OK) {
        fprintf(stderr, "teller %d: zkr_multilock_new: %s\n", t->id, zkr_strerror(rc));
        return -1;
    }
    rc = zkr_multilock_acquire(ml, LOCK_TIMEOUT_MS);
    if (rc != ZKR_OK) {
        zkr_multilock_free(ml);
        if (rc == ZKR_ETIMEDOUT) {
            t->timeouts++;
            atomic_fetch_add(&timeouts, 1);
            return 0;
        }
        fprintf(stderr, "teller %d: acquire: %s\n", t->id, zkr_strerror(rc));
        return -1;
    }
    int expect = 0;
    if (!atomic_compare_exchange_strong(&busy[from], &expect, 1))
        atomic_fetch_add(&violations, 1);
    expect = 0;
    if (!atomic_compare_exchange_strong(&busy[to], &expect, 1))
        atomic_fetch_add(&violations, 1);

    int moved_ok = move_money(t, from, to, amount);
    if (moved_ok > 0) {
        t->made++;
        atomic_fetch_add(&done_transfers, 1);
        atomic_fetch_add(&moved, amount);
        printf("teller %d: %s -> %s: %ld\n", t->id, strrchr(acct_path[from], '/') + 1,
               strrchr(acct_path[to], '/') + 1, amount);
    } else if (moved_ok == 0) {
        t->skipped++;
        atomic_fetch_add(&skipped, 1);
    }

    atomic_store(&busy[from], 0);
    atomic_store(&busy[to], 0);
    int rrc = zkr_multilock_release(ml);
    zkr_multilock_free(ml);
    if (rrc != ZKR_OK) {
        fprintf(stderr, "teller %d: release: %s\n", t->id, zkr_strerror(rrc));
        return -1;
    }
    return moved_ok < 0 ? -1 : 0;
}

static void *teller_main(void *arg)
{
    teller_t *t = arg;
    for (int k = 0; k < ntransfers; k++) {
        if (one_transfer(t) < 0)
            atomic_fetch_add(&errors, 1);
        ex_sleep_ms((int)(rand_r(&t->seed) % 3));
    }
    return NULL;
}

static int teller_open(teller_t *t, int id)
{
    memset(t, 0, sizeof *t);
    t->id = id;
    t->seed = (unsigned)(id * 7919 + (int)getpid());
    zkr_client_options_t opt;
    zkr_client_options_init(&opt);
    opt.zk_log_level = 0;
    int rc = zkr_client_open(&t->client, hosts, &opt);
    if (rc != ZKR_OK) {
        fprintf(stderr, "teller %d: zkr_client_open: %s\n", id, zkr_strerror(rc));
        return rc;
    }
    for (int i = 0; i < naccounts; i++) {
        if ((rc = zkr_mutex_new(&t->mutex[i], t->client, lock_path[i])) != ZKR_OK) {
            fprintf(stderr, "teller %d: zkr_mutex_new: %s\n", id, zkr_strerror(rc));
            return rc;
        }
    }
    return ZKR_OK;
}

static void teller_close(teller_t *t)
{
    for (int i = 0; i < naccounts; i++)
        zkr_mutex_free(t->mutex[i]);
    zkr_client_close(t->client);
}

/* ---- main ---------------------------------------------------------------------------- */

static const char usage_text[] =
    "usage: transfer [HOSTS] [--accounts N] [--threads T] [--transfers K] [--path PATH]\n"
    "\n"
    "T tellers, each with a session of its own, make K transfers each between N\n"
    "accounts kept in ZooKeeper, each transfer under a multi-lock of the two\n"
    "accounts' mutexes; check that the total is unchanged, no balance is\n"
    "negative, no account was held twice at once and no lock node is left.\n"
    "\n"
    "  HOSTS                ZooKeeper connection string (default $ZKR_HOSTS, then\n"
    "                       127.0.0.1:2181)\n"
    "  -a, --accounts N     accounts, 2..64 (default 5)\n"
    "  -t, --threads T      tellers, 1..64 (default 6)\n"
    "  -k, --transfers K    transfers per teller, 0..100000 (default 25)\n"
    "      --path PATH      where the accounts and the locks live (default /zkr-demo/bank)\n"
    "  -h, --help           this text\n";

static int parse_args(int argc, char **argv)
{
    static const struct option opts[] = {
        {"accounts", required_argument, NULL, 'a'},  {"threads", required_argument, NULL, 't'},
        {"transfers", required_argument, NULL, 'k'}, {"path", required_argument, NULL, 'P'},
        {"help", no_argument, NULL, 'h'},            {NULL, 0, NULL, 0},
    };
    int o, bad = 0;
    while ((o = getopt_long(argc, argv, "a:t:k:h", opts, NULL)) != -1) {
        switch (o) {
        case 'a': bad |= ex_int_arg("transfer", "accounts", optarg, 2, MAX_ACCOUNTS, &naccounts); break;
        case 't': bad |= ex_int_arg("transfer", "threads", optarg, 1, MAX_THREADS, &nthreads); break;
        case 'k': bad |= ex_int_arg("transfer", "transfers", optarg, 0, 100000, &ntransfers); break;
        case 'P': base = optarg; break;
        case 'h': return ex_usage(usage_text, 1);
        default: bad = -1; break;
        }
    }
    return ex_args_done(bad, argc, argv, &hosts, base, 200, usage_text);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (parse_args(argc, argv) != 0)
        return 2;
    for (int a = 0; a < naccounts; a++) {
        snprintf(acct_path[a], sizeof acct_path[a], "%s/accounts/acct-%02d", base, a);
        snprintf(lock_path[a], sizeof lock_path[a], "%s/locks/acct-%02d", base, a);
    }
    printf("transfer: %s, %d accounts of %d, %d tellers x %d transfers\n", hosts, naccounts, INITIAL_BALANCE,
           nthreads, ntransfers);

    zoo_set_debug_level(0); /* keep the ZooKeeper client's log quiet */
    data_zh = ex_data_connect("transfer", hosts);
    if (!data_zh)
        return 1;
    int zrc = ex_delete_tree(data_zh, base);
    char initial[32];
    snprintf(initial, sizeof initial, "%d", INITIAL_BALANCE);
    for (int a = 0; a < naccounts && zrc == ZOK; a++)
        zrc = ex_create_path(data_zh, acct_path[a], initial);
    if (zrc != ZOK) {
        fprintf(stderr, "transfer: cannot set up %s: %s\n", base, zerror(zrc));
        zookeeper_close(data_zh);
        return 1;
    }
    long long total_before = (long long)naccounts * INITIAL_BALANCE;

    static teller_t tellers[MAX_THREADS];
    pthread_t th[MAX_THREADS];
    int opened = 0, started = 0;
    for (; opened < nthreads; opened++)
        if (teller_open(&tellers[opened], opened + 1) != ZKR_OK) {
            opened++; /* partly opened: closed below */
            atomic_fetch_add(&errors, 1);
            break;
        }
    if (atomic_load(&errors) == 0)
        for (; started < nthreads; started++)
            if (pthread_create(&th[started], NULL, teller_main, &tellers[started]) != 0) {
                atomic_fetch_add(&errors, 1);
                break;
            }
    for (int k = 0; k < started; k++)
        pthread_join(th[k], NULL);

    /* The checks, on the server. */
    long long total = 0;
    int negative = 0, unreadable = 0;
    printf("balances:");
    for (int a = 0; a < naccounts; a++) {
        long b = 0;
        if (get_balance(a, &b, NULL) != ZOK) {
            unreadable++;
            continue;
        }
        printf(" %ld", b);
        total += b;
        if (b < 0)
            negative++;
    }
    printf("\n");
    int lock_nodes = 0;
    for (int a = 0; a < naccounts; a++) {
        struct String_vector kids = {0, NULL};
        zrc = zoo_get_children(data_zh, lock_path[a], 0, &kids);
        if (zrc == ZOK)
            lock_nodes += kids.count;
        else if (zrc != ZNONODE)
            unreadable++;
        deallocate_String_vector(&kids);
    }
    for (int k = 0; k < opened; k++) {
        printf("teller %d: %d transfers, %d skipped (not enough money), %d timeouts\n", tellers[k].id,
               tellers[k].made, tellers[k].skipped, tellers[k].timeouts);
        teller_close(&tellers[k]);
    }
    ex_delete_tree(data_zh, base);
    zookeeper_close(data_zh);

    printf("transfers: %d (moved %lld in all), skipped: %d, timeouts: %d, errors: %d, violations: %d\n",
           atomic_load(&done_transfers), (long long)atomic_load(&moved), atomic_load(&skipped),
           atomic_load(&timeouts), atomic_load(&errors), atomic_load(&violations));
    printf("total before: %lld, total after: %lld, negative balances: %d, lock nodes left: %d\n", total_before,
           total, negative, lock_nodes);
    int ok = total == total_before && negative == 0 && unreadable == 0 && lock_nodes == 0 &&
             atomic_load(&violations) == 0 && atomic_load(&errors) == 0 && atomic_load(&done_transfers) > 0;
    return ex_check(ok, "total unchanged, no negative balance, no lock node left, no account held twice");
}

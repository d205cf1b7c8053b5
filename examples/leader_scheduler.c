/* leader_scheduler: N processes, one periodic job, run by the leader only.
 *
 *   leader_scheduler [HOSTS] [--procs N] [--slots S] [--period-ms P]
 *                    [--kills K] [--pauses Q] [--session-ms T]
 *                    [--path /zkr-demo/scheduler]
 *   leader_scheduler --help
 *
 * HOSTS defaults to $ZKR_HOSTS, then 127.0.0.1:2181.  N worker processes
 * (forked here) join one leader latch (zkr_latch_t, Curator's LeaderLatch:
 * a Java process could join it too).  The leader runs job slot after job
 * slot: it reads the next slot from ZooKeeper, does the job (a sleep of P
 * ms), and records it with ONE guarded write (zkr_latch_guarded_write):
 *
 *   <path>/next          the next slot to run (decimal text), set to slot+1
 *   <path>/runs/run-SEQ  one record per run, "SLOT TOKEN PID"
 *
 * both applied in one transaction with a check that the leader's latch
 * node still exists on its session: a leader that was deposed while it
 * worked (paused past its session, cut off) writes nothing and says so.
 * The set of next carries no version on purpose: the guard alone keeps
 * two leaders from recording one slot, and the final check tests it.
 *
 * Meanwhile the parent process finds the leader (zkr_election_leader: the
 * ids are "worker-PID") and, Q times, stops it (SIGSTOP) until its session
 * has expired and another worker leads, then lets it go on (SIGCONT) in
 * the middle of its job: its write must be refused; then, K times, kills
 * it (SIGKILL): another takes over once its session is gone.
 * Once S slots are recorded the workers leave.  The check at the end:
 * every slot 0..S-1 recorded exactly once (no job slot run twice), next is
 * S, slots were recorded in order of their leaders' fencing tokens (a
 * later slot never by an earlier leader), and at least 1+K+Q leaders took
 * part when the kills and pauses hit a leader.  Prints "CHECK PASSED: ..."
 * (exit 0) or "CHECK FAILED: ..." (exit 1). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <zookeeper/zookeeper.h>
#include <zkr/zkr.h>

#include "exdata.h"

#define PROG "leader_scheduler"
#define MAX_PROCS 16
#define RUN_BOUND_MS 180000 /* the whole run, at most */

typedef struct config {
    const char *hosts;
    int procs, slots, period_ms, kills, pauses, session_ms;
    const char *path;
} config_t;

static config_t cfg = {NULL, 3, 30, 50, 1, 1, 3000, "/zkr-demo/scheduler"};
static char election_path[512], next_path[512], runs_path[512], run_prefix[512];

static zkr_client_t *open_client(void)
{
    zkr_client_options_t opt;
    zkr_client_options_init(&opt);
    opt.zk_log_level = 0;
    opt.session_timeout_ms = cfg.session_ms;
    zkr_client_t *c = NULL;
    int rc = zkr_client_open(&c, cfg.hosts, &opt);
    if (rc != ZKR_OK) {
        fprintf(stderr, PROG ": open %s: %s\n", cfg.hosts, zkr_strerror(rc));
        return NULL;
    }
    return c;
}

/* ---- plain data on the client's session ------------------------------------------ */

typedef struct read_next {
    int zrc, value;
} read_next_t;

static int read_next_fn(zhandle_t *zh, int64_t session_id, void *ctx)
{
    (void)session_id;
    read_next_t *r = ctx;
    char buf[32];
    int len = (int)sizeof buf - 1;
    r->zrc = zoo_get(zh, next_path, 0, buf, &len, NULL);
    if (r->zrc == ZOK) {
        buf[len > 0 ? len : 0] = '\0';
        r->value = atoi(buf);
    }
    return ZKR_OK;
}

/* The next slot, or -1 if it cannot be read now. */
static int read_next(zkr_client_t *c)
{
    read_next_t r = {ZSYSTEMERROR, 0};
    if (zkr_client_with_handle(c, read_next_fn, &r) != ZKR_OK || r.zrc != ZOK)
        return -1;
    return r.value;
}

/* ---- a worker ---------------------------------------------------------------------- */

/* One job slot, as leader: do it and record it, guarded by leadership.
 * Returns 1 if recorded, 0 if the write was refused (not leader any more:
 * nothing written), -1 on another error. */
static int run_slot(zkr_latch_t *l, int slot, int64_t token)
{
    ex_sleep_ms(cfg.period_ms); /* the job */
    char next[16], rec[64];
    int nlen = snprintf(next, sizeof next, "%d", slot + 1);
    int rlen = snprintf(rec, sizeof rec, "%d %" PRId64 " %d", slot, token, (int)getpid());
    zkr_op_t ops[2] = {
        ZKR_OP_SET_INIT(next_path, next, (size_t)nlen, -1),
        ZKR_OP_CREATE_INIT(run_prefix, rec, (size_t)rlen, ZKR_CREATE_SEQUENTIAL),
    };
    int rc = zkr_latch_guarded_write(l, ops, 2);
    zkr_ops_clear(ops, 2);
    if (rc == ZKR_OK)
        return 1;
    if (rc == ZKR_EGUARD || rc == ZKR_ENOTLEADER || rc == ZKR_ESESSIONLOST || rc == ZKR_ECONNLOSS) {
        /* deposed, or cut off: nothing recorded (after a lost connection
         * perhaps recorded: whoever leads next reads next again) */
        printf("worker %d: slot %d done, but no longer leader (%s): not recorded\n", (int)getpid(), slot,
               zkr_strerror(rc));
        return 0;
    }
    fprintf(stderr, "worker %d: slot %d: %s\n", (int)getpid(), slot, zkr_strerror(rc));
    return -1;
}

static int worker(void)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the parent */
    zkr_client_t *c = open_client();
    if (!c)
        return 2;
    char id[64];
    snprintf(id, sizeof id, "worker-%d", (int)getpid());
    zkr_latch_t *l = NULL;
    int rc = zkr_latch_new(&l, c, election_path, id);
    if (rc == ZKR_OK)
        rc = zkr_latch_start(l);
    if (rc != ZKR_OK) {
        fprintf(stderr, "worker %d: latch: %s\n", (int)getpid(), zkr_strerror(rc));
        zkr_latch_free(l);
        zkr_client_close(c);
        return 2;
    }
    int ran = 0, refused = 0, errors = 0;
    int64_t end = ex_now_ms() + RUN_BOUND_MS;
    while (ex_now_ms() < end) {
        int leads = zkr_latch_await(l, 200) == ZKR_OK;
        int slot = read_next(c);
        if (slot >= cfg.slots)
            break; /* every slot is recorded */
        int64_t token;
        if (!leads || slot < 0 || zkr_latch_fencing_token(l, &token) != ZKR_OK)
            continue;
        int r = run_slot(l, slot, token);
        ran += r == 1;
        refused += r == 0;
        errors += r < 0;
    }
    printf("worker %d: recorded %d slots, %d writes refused\n", (int)getpid(), ran, refused);
    zkr_latch_close(l, ZKR_LATCH_CLOSE_SILENT);
    zkr_latch_free(l);
    zkr_client_close(c);
    return errors > 10 ? 1 : 0;
}

/* ---- the parent: set-up, faults, check ----------------------------------------------- */

static int reset_fn(zhandle_t *zh, int64_t session_id, void *ctx)
{
    (void)session_id;
    *(int *)ctx = ex_fresh_tree(zh, cfg.path, "next", "runs");
    return ZKR_OK;
}

/* The leader's pid (its id is "worker-PID"), waiting at most ms for one
 * other than not_pid; 0 if none. */
static pid_t find_leader(zkr_client_t *c, pid_t not_pid, int ms)
{
    int64_t end = ex_now_ms() + ms;
    do {
        zkr_participant_t *l = NULL;
        if (zkr_election_leader(c, election_path, ZKR_ELECTION_LATCH, &l) == ZKR_OK) {
            pid_t pid = strncmp(l->id, "worker-", 7) == 0 ? (pid_t)atoi(l->id + 7) : 0;
            zkr_participants_free(l, 1);
            if (pid > 0 && pid != not_pid)
                return pid;
        }
        ex_sleep_ms(20);
    } while (ex_now_ms() < end);
    return 0;
}

/* Wait until at least `slots` are recorded (bounded). */
static void wait_slots(zkr_client_t *c, int slots, int ms)
{
    int64_t end = ex_now_ms() + ms;
    while (ex_now_ms() < end && read_next(c) < slots)
        ex_sleep_ms(20);
}

typedef struct run {
    int slot;
    int64_t token;
} run_t;

static int cmp_run(const void *a, const void *b)
{
    const run_t *x = a, *y = b;
    return (x->slot > y->slot) - (x->slot < y->slot);
}

typedef struct check {
    int ok, leaders, records;
} check_t;

static int check_fn(zhandle_t *zh, int64_t session_id, void *ctx)
{
    (void)session_id;
    check_t *ck = ctx;
    ck->ok = 0;
    struct String_vector kids = {0, NULL};
    int zrc = zoo_get_children(zh, runs_path, 0, &kids);
    if (zrc != ZOK) {
        fprintf(stderr, "check: list %s: %s\n", runs_path, zerror(zrc));
        return ZKR_OK;
    }
    run_t *runs = calloc((size_t)kids.count + 1, sizeof *runs);
    int ok = runs != NULL;
    for (int i = 0; ok && i < kids.count; i++) {
        char p[600], buf[64];
        int len = (int)sizeof buf - 1;
        snprintf(p, sizeof p, "%s/%s", runs_path, kids.data[i]);
        long long token = 0;
        if (zoo_get(zh, p, 0, buf, &len, NULL) != ZOK || len < 0 ||
            (buf[len] = '\0', sscanf(buf, "%d %lld", &runs[i].slot, &token)) != 2) {
            fprintf(stderr, "check: cannot read %s\n", p);
            ok = 0;
        }
        runs[i].token = token;
    }
    ck->records = kids.count;
    if (ok) {
        qsort(runs, (size_t)kids.count, sizeof *runs, cmp_run);
        if (kids.count != cfg.slots) {
            fprintf(stderr, "check: %d records for %d slots\n", kids.count, cfg.slots);
            ok = 0;
        }
        for (int i = 0; i < kids.count; i++) {
            if (runs[i].slot != i) {
                if (i > 0 && runs[i].slot == runs[i - 1].slot)
                    fprintf(stderr, "check: slot %d recorded twice\n", runs[i].slot);
                else
                    fprintf(stderr, "check: slot %d never recorded\n", i);
                ok = 0;
                break;
            }
            if (i > 0 && runs[i].token < runs[i - 1].token) {
                fprintf(stderr, "check: slot %d by an earlier leader than slot %d\n", i, i - 1);
                ok = 0;
            }
            if (i == 0 || runs[i].token != runs[i - 1].token)
                ck->leaders++;
        }
    }
    free(runs);
    deallocate_String_vector(&kids);
    char buf[32];
    int len = (int)sizeof buf - 1;
    zrc = zoo_get(zh, next_path, 0, buf, &len, NULL);
    if (zrc != ZOK || len < 0 || (buf[len] = '\0', atoi(buf)) != cfg.slots) {
        fprintf(stderr, "check: next is not %d\n", cfg.slots);
        ok = 0;
    }
    ck->ok = ok;
    return ZKR_OK;
}

static const char usage_text[] =
    "usage: leader_scheduler [HOSTS] [--procs N] [--slots S] [--period-ms P] [--kills K]\n"
    "                        [--pauses Q] [--session-ms T] [--path PATH]\n"
    "\n"
    "N worker processes in one leader election; the leader runs job slot after job\n"
    "slot and records each with a write guarded by its leadership.  The leader is\n"
    "stopped past its session Q times and killed K times: another takes over.  Then\n"
    "check that every slot was recorded exactly once, in order of leadership.\n"
    "\n"
    "  -p, --procs N       worker processes, 2..16 (default 3)\n"
    "  -s, --slots S       job slots, 1..10000 (default 30)\n"
    "  -i, --period-ms P   how long a job takes, 0..10000 ms (default 50)\n"
    "  -k, --kills K       leaders killed with SIGKILL, 0..14 (default 1)\n"
    "  -z, --pauses Q      leaders stopped past their session, 0..14 (default 1)\n"
    "  -t, --session-ms T  the workers' session timeout, 1000..60000 (default 3000)\n"
    "  -P, --path PATH     the data (default /zkr-demo/scheduler)\n"
    "  -h, --help          this help\n";

static int parse_args(int argc, char **argv)
{
    static const struct option opts[] = {
        {"procs", required_argument, NULL, 'p'},      {"slots", required_argument, NULL, 's'},
        {"period-ms", required_argument, NULL, 'i'},  {"kills", required_argument, NULL, 'k'},
        {"pauses", required_argument, NULL, 'z'},     {"session-ms", required_argument, NULL, 't'},
        {"path", required_argument, NULL, 'P'},       {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c, bad = 0;
    while (!bad && (c = getopt_long(argc, argv, "p:s:i:k:z:t:P:h", opts, NULL)) != -1) {
        switch (c) {
        case 'p': bad = ex_int_arg(PROG, "procs", optarg, 2, MAX_PROCS, &cfg.procs); break;
        case 's': bad = ex_int_arg(PROG, "slots", optarg, 1, 10000, &cfg.slots); break;
        case 'i': bad = ex_int_arg(PROG, "period-ms", optarg, 0, 10000, &cfg.period_ms); break;
        case 'k': bad = ex_int_arg(PROG, "kills", optarg, 0, MAX_PROCS - 2, &cfg.kills); break;
        case 'z': bad = ex_int_arg(PROG, "pauses", optarg, 0, MAX_PROCS - 2, &cfg.pauses); break;
        case 't': bad = ex_int_arg(PROG, "session-ms", optarg, 1000, 60000, &cfg.session_ms); break;
        case 'P': cfg.path = optarg; break;
        case 'h': return ex_usage(usage_text, 1);
        default: bad = -1;
        }
    }
    if (!bad && cfg.kills >= cfg.procs) {
        fprintf(stderr, PROG ": --kills must leave a worker: fewer than --procs\n");
        bad = -1;
    }
    return ex_args_done(bad, argc, argv, &cfg.hosts, cfg.path, 400, usage_text);
}

int main(int argc, char **argv)
{
    int rc = parse_args(argc, argv);
    if (rc)
        return rc;
    snprintf(election_path, sizeof election_path, "%s/election", cfg.path);
    snprintf(next_path, sizeof next_path, "%s/next", cfg.path);
    snprintf(runs_path, sizeof runs_path, "%s/runs", cfg.path);
    snprintf(run_prefix, sizeof run_prefix, "%s/runs/run-", cfg.path);
    setvbuf(stdout, NULL, _IOLBF, 0);

    /* workers open their own connections: fork before any ZooKeeper thread */
    pid_t pids[MAX_PROCS];
    int setup = ZSYSTEMERROR;
    zkr_client_t *c = open_client();
    if (!c || zkr_client_with_handle(c, reset_fn, &setup) != ZKR_OK || setup != ZOK) {
        fprintf(stderr, PROG ": cannot set %s up: %s\n", cfg.path, zerror(setup));
        if (c)
            zkr_client_close(c);
        return ex_check(0, "set-up");
    }
    zkr_client_close(c);
    for (int i = 0; i < cfg.procs; i++) {
        pids[i] = fork();
        if (pids[i] == 0)
            _exit(worker());
        if (pids[i] < 0) {
            perror("fork");
            for (int k = 0; k < i; k++)
                kill(pids[k], SIGKILL);
            return ex_check(0, "fork");
        }
    }
    printf("%d workers, %d job slots of %d ms; %d pause(s) past the session, %d kill(s) of the leader\n",
           cfg.procs, cfg.slots, cfg.period_ms, cfg.pauses, cfg.kills);

    c = open_client();
    int hits = 0;
    pid_t last = 0;
    for (int f = 0; c && f < cfg.pauses + cfg.kills; f++) {
        wait_slots(c, (f + 1) * cfg.slots / (cfg.pauses + cfg.kills + 2) + 1, 30000);
        pid_t leader = find_leader(c, last, 30000);
        if (leader <= 0 || read_next(c) >= cfg.slots)
            break;
        if (f < cfg.pauses) {
            /* stopped until its session is gone and another leads: then
             * it goes on, still in the middle of its job */
            printf("parent: stopping leader %d until another leads\n", (int)leader);
            kill(leader, SIGSTOP);
            pid_t next = find_leader(c, leader, cfg.session_ms * 5);
            kill(leader, SIGCONT);
            printf("parent: leader %d took over; %d goes on\n", (int)next, (int)leader);
        } else {
            printf("parent: killing leader %d\n", (int)leader);
            kill(leader, SIGKILL);
        }
        hits++;
        last = leader;
    }
    if (c)
        zkr_client_close(c);

    int failed = 0;
    int64_t end = ex_now_ms() + RUN_BOUND_MS;
    for (int i = 0; i < cfg.procs; i++) {
        int st = 0;
        while (waitpid(pids[i], &st, WNOHANG) == 0) {
            if (ex_now_ms() > end) {
                kill(pids[i], SIGKILL);
                waitpid(pids[i], &st, 0);
                failed = 1;
                break;
            }
            ex_sleep_ms(50);
        }
        if (WIFEXITED(st) && WEXITSTATUS(st) != 0)
            failed = 1; /* a worker failed; killed ones are expected */
    }

    check_t ck = {0, 0, 0};
    if (!(c = open_client()) || zkr_client_with_handle(c, check_fn, &ck) != ZKR_OK)
        ck.ok = 0;
    if (c) {
        zkr_client_with_handle(c, ex_delete_tree_fn, (void *)cfg.path);
        zkr_client_close(c);
    }
    char what[256];
    snprintf(what, sizeof what, "%d records for %d slots, once each, in order of %d leaders (%d pause(s) and kill(s) "
             "hit a leader)", ck.records, cfg.slots, ck.leaders, hits);
    return ex_check(ck.ok && !failed && ck.leaders >= 1 + hits, what);
}

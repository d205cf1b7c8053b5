/* Leader election: the latch (at most one leader, hand-over in order,
 * outside deletion, a vanished path, SUSPENDED / LOST / RECONNECTED, the
 * leader's node on our current session), tokens, the selector (never two
 * terms at once, auto requeue, interrupt, told to stop), the asynchronous
 * term and its cancel, observers, proclaim, guarded writes, bad input, no
 * herd, nothing left after close. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/harness/zkproxy.h"
#include "tests/harness/zkr_test.h"

#define SESSION_MS 4000
#define WAIT_MS 15000 /* bound for what must happen */
#define N_LATCH 5
#define N_HERD 100 /* participants, over HERD_CLIENTS sessions */
#define HERD_CLIENTS 10

/* ---- helpers ----------------------------------------------------------------------- */

static const char *base_of(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* "_c_<36>-<marker><10 digits>" */
static int protected_name(const char *name, const char *marker)
{
    size_t ml = strlen(marker);
    if (strncmp(name, "_c_", 3) != 0 || strlen(name) != 3 + 36 + 1 + ml + 10 || name[39] != '-')
        return 0;
    if (strncmp(name + 40, marker, ml) != 0)
        return 0;
    for (const char *d = name + 40 + ml; *d; d++)
        if (*d < '0' || *d > '9')
            return 0;
    return 1;
}

typedef struct told {
    pthread_mutex_t mu;
    int n;
    int is_leader[64];
    int64_t token[64];
} told_t;

static void told_init(told_t *t)
{
    memset(t, 0, sizeof *t);
    pthread_mutex_init(&t->mu, NULL);
}

static void on_leader(zkr_latch_t *latch, int is_leader, int64_t token, void *ctx)
{
    (void)latch;
    told_t *t = ctx;
    pthread_mutex_lock(&t->mu);
    if (t->n < 64) {
        t->is_leader[t->n] = is_leader;
        t->token[t->n] = token;
        t->n++;
    }
    pthread_mutex_unlock(&t->mu);
}

static void on_leader_sel(zkr_selector_t *sel, int is_leader, int64_t token, void *ctx)
{
    (void)sel;
    on_leader(NULL, is_leader, token, ctx);
}

static int told_count(told_t *t)
{
    pthread_mutex_lock(&t->mu);
    int n = t->n;
    pthread_mutex_unlock(&t->mu);
    return n;
}

typedef struct want_told {
    told_t *t;
    int n;
} want_told_t;

static int told_reached(void *arg)
{
    want_told_t *w = arg;
    return told_count(w->t) >= w->n;
}

static int wait_told(told_t *t, int n)
{
    want_told_t w = {t, n};
    return zkt_wait_for(told_reached, &w, WAIT_MS);
}

static int latch_not_leading(void *arg)
{
    return !zkr_latch_has_leadership(arg);
}

static int64_t session_of(zkr_client_t *c)
{
    int64_t id = 0;
    CU_ASSERT_EQUAL(zkr_client_session(c, &id, NULL), ZKR_OK);
    return id;
}

/* Participants of a latch path (asserting the read worked). */
static size_t participants(zkr_client_t *c, const char *path, zkr_election_kind_t kind, zkr_participant_t **p)
{
    size_t n = 0;
    CU_ASSERT_EQUAL(zkr_election_participants(c, path, kind, p, &n), ZKR_OK);
    return n;
}

/* ---- the latch: one alone ---------------------------------------------------------- */

static void test_latch_alone(void)
{
    char path[128];
    zkt_path("latch-alone", path, sizeof path);
    zhandle_t *raw = zkt_raw();
    zkr_client_t *c = zkt_client(SESSION_MS);
    zkr_latch_t *l;
    told_t t;
    told_init(&t);
    CU_ASSERT_EQUAL_FATAL(zkr_latch_new(&l, c, path, "worker-\xc3\xa9"), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_latch_await(l, 0), ZKR_ESTATE); /* not started */
    CU_ASSERT_EQUAL(zkr_latch_close(l, ZKR_LATCH_CLOSE_SILENT), ZKR_ESTATE);
    CU_ASSERT_EQUAL(zkr_latch_set_listener(l, on_leader, &t), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_latch_start(l), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_latch_start(l), ZKR_ESTATE);
    CU_ASSERT_EQUAL(zkr_latch_set_policy(l, ZKR_LEADER_POLICY_SESSION), ZKR_ESTATE);
    CU_ASSERT_EQUAL(zkr_latch_await(l, WAIT_MS), ZKR_OK);
    CU_ASSERT_TRUE(zkr_latch_has_leadership(l));
    CU_ASSERT_STRING_EQUAL(zkr_latch_id(l), "worker-\xc3\xa9");
    int64_t token = 0;
    CU_ASSERT_EQUAL(zkr_latch_fencing_token(l, &token), ZKR_OK);
    char *mine = NULL;
    CU_ASSERT_EQUAL(zkr_latch_node_path(l, &mine), ZKR_OK);

    /* Wire: one protected latch node, data = the id, czxid = the token. */
    zkr_participant_t *p = NULL;
    size_t n = participants(c, path, ZKR_ELECTION_LATCH, &p);
    CU_ASSERT_EQUAL_FATAL(n, 1);
    CU_ASSERT_TRUE(protected_name(base_of(p[0].node_path), "latch-"));
    CU_ASSERT_STRING_EQUAL(p[0].id, "worker-\xc3\xa9");
    CU_ASSERT_EQUAL(p[0].id_len, strlen("worker-\xc3\xa9"));
    CU_ASSERT_EQUAL(p[0].token, token);
    CU_ASSERT_EQUAL(p[0].session, session_of(c));
    CU_ASSERT_TRUE(p[0].is_leader);
    CU_ASSERT_STRING_EQUAL(mine ? mine : "", p[0].node_path); /* the term's node, a copy */
    zkr_free(mine);
    CU_ASSERT_EQUAL(zkr_latch_node_path(l, NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_latch_node_path(NULL, &mine), ZKR_EINVAL);
    CU_ASSERT_PTR_NULL(mine);
    zkr_participants_free(p, n);
    zkr_participant_t *ld = NULL;
    CU_ASSERT_EQUAL(zkr_election_leader(c, path, ZKR_ELECTION_LATCH, &ld), ZKR_OK);
    CU_ASSERT_EQUAL(ld ? ld->token : 0, token);
    zkr_participants_free(ld, 1);

    /* The listener is told once, on the client thread; NOTIFY_LEADER tells
     * "not leader" before close returns. */
    CU_ASSERT_TRUE(wait_told(&t, 1));
    CU_ASSERT_EQUAL(zkr_latch_close(l, ZKR_LATCH_CLOSE_NOTIFY_LEADER), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(told_count(&t), 2);
    CU_ASSERT_EQUAL(t.is_leader[0], 1);
    CU_ASSERT_EQUAL(t.token[0], token);
    CU_ASSERT_EQUAL(t.is_leader[1], 0);
    CU_ASSERT_FALSE(zkr_latch_has_leadership(l));
    CU_ASSERT_EQUAL(zkr_latch_fencing_token(l, &token), ZKR_ENOTLEADER);
    CU_ASSERT_EQUAL(zkr_latch_node_path(l, &mine), ZKR_ENOTLEADER);
    CU_ASSERT_PTR_NULL(mine);
    CU_ASSERT_EQUAL(zkr_latch_close(l, ZKR_LATCH_CLOSE_SILENT), ZKR_ESTATE); /* twice */
    CU_ASSERT_EQUAL(zkr_latch_await(l, 0), ZKR_ESTATE);
    CU_ASSERT_EQUAL(zkr_latch_start(l), ZKR_ESTATE);
    CU_ASSERT_EQUAL(zkt_count_children(raw, path), 0); /* nothing left */
    zkr_latch_free(l);
    zkr_client_close(c);
    zkt_raw_close(raw);
}

/* A SILENT close tells nothing; Curator's default id "" is zero bytes. */
static void test_latch_silent_default_id(void)
{
    char path[128];
    zkt_path("latch-silent", path, sizeof path);
    zkr_client_t *c = zkt_client(SESSION_MS);
    zkr_latch_t *l;
    told_t t;
    told_init(&t);
    CU_ASSERT_EQUAL_FATAL(zkr_latch_new(&l, c, path, NULL), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_latch_set_listener(l, on_leader, &t), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_latch_start(l), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_latch_await(l, WAIT_MS), ZKR_OK);
    zhandle_t *raw = zkt_raw();
    zkr_participant_t *p = NULL;
    size_t n = participants(c, path, ZKR_ELECTION_LATCH, &p);
    CU_ASSERT_EQUAL_FATAL(n, 1);
    char buf[8];
    int len = sizeof buf;
    CU_ASSERT_EQUAL(zoo_get(raw, p[0].node_path, 0, buf, &len, NULL), ZOK);
    CU_ASSERT_EQUAL(len, 0);
    zkr_participants_free(p, n);
    CU_ASSERT_TRUE(wait_told(&t, 1));
    CU_ASSERT_EQUAL(zkr_latch_close(l, ZKR_LATCH_CLOSE_SILENT), ZKR_OK);
    CU_ASSERT_EQUAL(told_count(&t), 1);
    zkr_latch_free(l);
    zkr_client_close(c);
    zkt_raw_close(raw);
}

/* ---- N latches: at most one leader, hand-over in order, tokens increase ------------- */

typedef struct checker {
    zkr_latch_t **l;
    int n;
    atomic_int stop;
    atomic_int overlaps;
    atomic_long passes;
    pthread_t th;
} checker_t;

/* Two passes in opposite orders: latches i and j both seen leading in
 * both passes means one led after the other had begun, i.e. both at once
 * (a hand-over between two reads of one pass alone is no overlap). */
static void *check_main(void *arg)
{
    checker_t *k = arg;
    while (!atomic_load(&k->stop)) {
        int a[64], b[64];
        for (int i = 0; i < k->n; i++)
            a[i] = zkr_latch_has_leadership(k->l[i]);
        for (int i = k->n - 1; i >= 0; i--)
            b[i] = zkr_latch_has_leadership(k->l[i]);
        for (int i = 0; i < k->n; i++)
            for (int j = i + 1; j < k->n; j++)
                if (a[i] && a[j] && b[i] && b[j])
                    atomic_fetch_add(&k->overlaps, 1);
        atomic_fetch_add(&k->passes, 1);
        nanosleep(&(struct timespec){0, 100000}, NULL); /* two shared cores: leave room */
    }
    return NULL;
}

/* n latches "p0".."p<n-1>", one session each, joined in this order. */
/* n latches join in order, latch i on client i % nc (nc clients made here:
 * consecutive latches are on different sessions). */
static void latches_join_on(const char *path, zhandle_t *raw, zkr_client_t **c, int nc, zkr_latch_t **l, int n)
{
    for (int i = 0; i < nc; i++)
        c[i] = zkt_client(SESSION_MS);
    for (int i = 0; i < n; i++) {
        char id[16];
        snprintf(id, sizeof id, "p%d", i);
        CU_ASSERT_EQUAL_FATAL(zkr_latch_new(&l[i], c[i % nc], path, id), ZKR_OK);
        CU_ASSERT_EQUAL_FATAL(zkr_latch_start(l[i]), ZKR_OK);
        CU_ASSERT_TRUE(zkt_wait_children(raw, path, i + 1, WAIT_MS));
    }
}

static void latches_join(const char *path, zhandle_t *raw, zkr_client_t **c, zkr_latch_t **l, int n)
{
    latches_join_on(path, raw, c, n, l, n);
}

static void test_latch_handover(void)
{
    char path[128];
    zkt_path("latch-handover", path, sizeof path);
    zhandle_t *raw = zkt_raw();
    zkr_client_t *c[N_LATCH];
    zkr_latch_t *l[N_LATCH];
    latches_join(path, raw, c, l, N_LATCH);
    checker_t k = {.l = l, .n = N_LATCH};
    pthread_create(&k.th, NULL, check_main, &k);
    CU_ASSERT_EQUAL(zkr_latch_await(l[0], WAIT_MS), ZKR_OK);

    /* Participants as Curator reads them: join order, leader first. */
    zkr_participant_t *p = NULL;
    size_t n = participants(c[0], path, ZKR_ELECTION_LATCH, &p);
    CU_ASSERT_EQUAL(n, N_LATCH);
    for (size_t i = 0; i < n && i < N_LATCH; i++) {
        char id[16];
        snprintf(id, sizeof id, "p%zu", i);
        CU_ASSERT_STRING_EQUAL(p[i].id, id);
        CU_ASSERT_EQUAL(p[i].is_leader, i == 0);
    }
    zkr_participants_free(p, n);

    int64_t last = 0;
    for (int i = 0; i < N_LATCH; i++) {
        CU_ASSERT_EQUAL(zkr_latch_await(l[i], WAIT_MS), ZKR_OK);
        for (int j = i + 1; j < N_LATCH; j++)
            CU_ASSERT_FALSE(zkr_latch_has_leadership(l[j]));
        int64_t token = 0;
        CU_ASSERT_EQUAL(zkr_latch_fencing_token(l[i], &token), ZKR_OK);
        CU_ASSERT_TRUE(token > last); /* every later leader's token is larger */
        last = token;
        CU_ASSERT_EQUAL(zkr_latch_close(l[i], ZKR_LATCH_CLOSE_NOTIFY_LEADER), ZKR_OK);
    }
    atomic_store(&k.stop, 1);
    pthread_join(k.th, NULL);
    printf("\n    %ld passes over %d latches, overlaps %d ", atomic_load(&k.passes), N_LATCH,
           atomic_load(&k.overlaps));
    CU_ASSERT_EQUAL(atomic_load(&k.overlaps), 0);
    CU_ASSERT_TRUE(atomic_load(&k.passes) > 0);
    CU_ASSERT_EQUAL(zkt_count_children(raw, path), 0);
    for (int i = 0; i < N_LATCH; i++) {
        zkr_latch_free(l[i]);
        zkr_client_close(c[i]);
    }
    zkt_raw_close(raw);
}

/* Two latches on their own sessions: "a" leads, "b" has joined behind it. */
typedef struct pair {
    char path[128];
    zhandle_t *raw;
    zkr_client_t *a, *b;
    zkr_latch_t *la, *lb;
} pair_t;

static void pair_open(pair_t *p, const char *name)
{
    zkt_path(name, p->path, sizeof p->path);
    p->raw = zkt_raw();
    p->a = zkt_client(SESSION_MS);
    p->b = zkt_client(SESSION_MS);
    CU_ASSERT_EQUAL_FATAL(zkr_latch_new(&p->la, p->a, p->path, "a"), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_latch_new(&p->lb, p->b, p->path, "b"), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_latch_start(p->la), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_latch_await(p->la, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_latch_start(p->lb), ZKR_OK);
    CU_ASSERT_TRUE(zkt_wait_children(p->raw, p->path, 2, WAIT_MS));
}

/* Both close (whatever state they are in); nothing is left. */
static void pair_close(pair_t *p)
{
    CU_ASSERT_EQUAL(zkr_latch_close(p->la, ZKR_LATCH_CLOSE_SILENT), ZKR_OK);
    zkr_latch_close(p->lb, ZKR_LATCH_CLOSE_SILENT);
    CU_ASSERT_EQUAL(zkt_count_children(p->raw, p->path), 0);
    zkr_latch_free(p->la);
    zkr_latch_free(p->lb);
    zkr_client_close(p->a);
    zkr_client_close(p->b);
    zkt_raw_close(p->raw);
}

/* Many latches of one client, on as many paths, join at once: their
 * creates go out combined (one multi per batch: the nodes of one batch
 * share their czxid), each node with its own id as data. */
static void test_latch_ids_combined(void)
{
    enum { NL = 8 };
    char base[128], path[NL][160];
    zkt_path("latch-combined", base, sizeof base);
    zhandle_t *raw = zkt_raw();
    zkr_client_t *c = zkt_client(SESSION_MS);
    zkr_latch_t *l[NL];
    for (int i = 0; i < NL; i++) {
        char id[16];
        snprintf(id, sizeof id, "id-%d", i);
        snprintf(path[i], sizeof path[i], "%s-%d", base, i);
        CU_ASSERT_EQUAL_FATAL(zkr_latch_new(&l[i], c, path[i], id), ZKR_OK);
    }
    for (int i = 0; i < NL; i++)
        CU_ASSERT_EQUAL(zkr_latch_start(l[i]), ZKR_OK);
    int64_t token[NL];
    int shared = 0;
    for (int i = 0; i < NL; i++) {
        CU_ASSERT_EQUAL(zkr_latch_await(l[i], WAIT_MS), ZKR_OK);
        zkr_participant_t *p = NULL;
        size_t n = participants(c, path[i], ZKR_ELECTION_LATCH, &p);
        CU_ASSERT_EQUAL_FATAL(n, 1);
        CU_ASSERT_STRING_EQUAL(p[0].id, zkr_latch_id(l[i]));
        CU_ASSERT_EQUAL(zkr_latch_fencing_token(l[i], &token[i]), ZKR_OK);
        CU_ASSERT_EQUAL(p[0].token, token[i]);
        zkr_participants_free(p, n);
        for (int j = 0; j < i; j++)
            if (token[j] == token[i]) {
                shared++;
                break;
            }
    }
    printf("\n    %d of %d nodes made in a multi with an earlier one ", shared, NL);
    for (int i = 0; i < NL; i++) {
        zkr_latch_free(l[i]);
        CU_ASSERT_EQUAL(zkt_count_children(raw, path[i]), 0);
    }
    zkr_client_close(c);
    zkt_raw_close(raw);
}

/* ---- outside deletion of the leader's node; the path itself deleted ------------------ */

static void test_latch_outside_deletion(void)
{
    pair_t pr;
    pair_open(&pr, "latch-outside");
    const char *path = pr.path;
    zhandle_t *raw = pr.raw;
    zkr_client_t *a = pr.a;
    zkr_latch_t *la = pr.la, *lb = pr.lb;
    int64_t ta = 0, tb = 0;
    CU_ASSERT_EQUAL(zkr_latch_fencing_token(la, &ta), ZKR_OK);

    /* Someone deletes a's node: b leads, a rejoins behind it. */
    zkr_participant_t *ld = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_election_leader(a, path, ZKR_ELECTION_LATCH, &ld), ZKR_OK);
    CU_ASSERT_EQUAL(zoo_delete(raw, ld->node_path, -1), ZOK);
    zkr_participants_free(ld, 1);
    CU_ASSERT_EQUAL(zkr_latch_await(lb, WAIT_MS), ZKR_OK);
    CU_ASSERT_TRUE(zkt_wait_for(latch_not_leading, la, WAIT_MS));
    CU_ASSERT_TRUE(zkt_wait_children(raw, path, 2, WAIT_MS));
    CU_ASSERT_EQUAL(zkr_latch_fencing_token(lb, &tb), ZKR_OK);
    CU_ASSERT_TRUE(tb > ta);
    zkr_participant_t *p = NULL;
    size_t n = participants(a, path, ZKR_ELECTION_LATCH, &p);
    CU_ASSERT_EQUAL_FATAL(n, 2);
    CU_ASSERT_STRING_EQUAL(p[0].id, "b");
    CU_ASSERT_STRING_EQUAL(p[1].id, "a");
    /* A waiter's node deleted by someone: it joins again, behind. */
    CU_ASSERT_EQUAL(zoo_delete(raw, p[1].node_path, -1), ZOK);
    zkr_participants_free(p, n);
    int64_t t0 = zkt_now_ms();
    do {
        zkt_sleep_ms(20);
        n = participants(a, path, ZKR_ELECTION_LATCH, &p);
        int back = n == 2 && strcmp(p[1].id, "a") == 0;
        zkr_participants_free(p, n);
        if (back)
            break;
    } while (zkt_now_ms() - t0 < WAIT_MS);
    CU_ASSERT_EQUAL(n, 2);
    CU_ASSERT_TRUE(zkr_latch_has_leadership(lb));
    CU_ASSERT_FALSE(zkr_latch_has_leadership(la));

    /* The whole path goes (a cluster rebuilt): both reset, one leads. */
    struct String_vector sv = {0, NULL};
    if (zoo_get_children(raw, path, 0, &sv) == ZOK) {
        for (int i = 0; i < sv.count; i++) {
            char full[512];
            snprintf(full, sizeof full, "%s/%s", path, sv.data[i]);
            zoo_delete(raw, full, -1);
        }
        deallocate_String_vector(&sv);
    }
    zoo_delete(raw, path, -1);
    CU_ASSERT_TRUE(zkt_wait_children(raw, path, 2, WAIT_MS));
    t0 = zkt_now_ms();
    while (zkt_now_ms() - t0 < WAIT_MS && zkr_latch_has_leadership(la) + zkr_latch_has_leadership(lb) != 1)
        zkt_sleep_ms(20);
    CU_ASSERT_EQUAL(zkr_latch_has_leadership(la) + zkr_latch_has_leadership(lb), 1);
    int64_t tn = 0;
    zkr_latch_t *now = zkr_latch_has_leadership(la) ? la : lb;
    CU_ASSERT_EQUAL(zkr_latch_fencing_token(now, &tn), ZKR_OK);
    CU_ASSERT_TRUE(tn > tb);
    pair_close(&pr);
}

/* ---- the connection: SUSPENDED, LOST, RECONNECTED ------------------------------------ */

static void suspended_case(zkr_leader_policy_t policy)
{
    char path[128];
    zkt_path("latch-suspend", path, sizeof path);
    zkt_proxy_t *px = zkt_proxy_start(zkt_server_port());
    CU_ASSERT_PTR_NOT_NULL_FATAL(px);
    /* a longer session: the reconnection after SUSPENDED (2/3 of it) has
     * a third of it to come back on the same session */
    zkr_client_t *c = zkt_client_at(zkt_proxy_hosts(px), 2 * SESSION_MS);
    zkr_latch_t *l;
    told_t t;
    told_init(&t);
    CU_ASSERT_EQUAL_FATAL(zkr_latch_new(&l, c, path, "x"), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_latch_set_policy(l, policy), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_latch_set_listener(l, on_leader, &t), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_latch_start(l), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_latch_await(l, WAIT_MS), ZKR_OK);
    int64_t token = 0, again = 0;
    CU_ASSERT_EQUAL(zkr_latch_fencing_token(l, &token), ZKR_OK);
    /* A stall shorter than the session: SUSPENDED, then RECONNECTED. */
    CU_ASSERT_EQUAL(zkt_proxy_stall(px, 1), 0);
    int64_t t0 = zkt_now_ms();
    while (zkt_now_ms() - t0 < WAIT_MS && zkr_client_state(c) != ZKR_STATE_SUSPENDED)
        zkt_sleep_ms(10);
    CU_ASSERT_EQUAL(zkr_client_state(c), ZKR_STATE_SUSPENDED);
    if (policy == ZKR_LEADER_POLICY_STANDARD) {
        CU_ASSERT_TRUE(zkt_wait_for(latch_not_leading, l, WAIT_MS)); /* in doubt: not leader */
    } else {
        CU_ASSERT_TRUE(zkr_latch_has_leadership(l)); /* only LOST counts */
    }
    zkt_proxy_cut(px);
    CU_ASSERT_EQUAL(zkt_proxy_stall(px, 0), 0);
    CU_ASSERT_EQUAL(zkr_latch_await(l, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_latch_fencing_token(l, &again), ZKR_OK);
    CU_ASSERT_EQUAL(again, token); /* same node, same session: same term */
    if (policy == ZKR_LEADER_POLICY_STANDARD) {
        CU_ASSERT_TRUE(wait_told(&t, 3));
        CU_ASSERT_EQUAL(t.is_leader[1], 0);
        CU_ASSERT_EQUAL(t.is_leader[2], 1);
    } else {
        zkt_sleep_ms(200);
        CU_ASSERT_EQUAL(told_count(&t), 1);
    }
    CU_ASSERT_EQUAL(zkr_latch_close(l, ZKR_LATCH_CLOSE_SILENT), ZKR_OK);
    zkr_latch_free(l);
    zkr_client_close(c);
    zkt_proxy_stop(px);
}

static void test_latch_suspended_standard(void)
{
    suspended_case(ZKR_LEADER_POLICY_STANDARD);
}

static void test_latch_suspended_session_policy(void)
{
    suspended_case(ZKR_LEADER_POLICY_SESSION);
}

/* LOST: not leader; the other leads; after the new session the latch
 * rejoins, with a node of its new session (the leader's node is always
 * of the leader's current session: CURATOR-696). */
static void test_latch_lost_rejoins(void)
{
    pair_t pr;
    pair_open(&pr, "latch-lost");
    const char *path = pr.path;
    zhandle_t *raw = pr.raw;
    zkr_client_t *a = pr.a, *b = pr.b;
    zkr_latch_t *la = pr.la, *lb = pr.lb;
    int64_t old_session = session_of(a);
    zkt_expire_client(a, SESSION_MS);
    CU_ASSERT_EQUAL(zkr_latch_await(lb, WAIT_MS), ZKR_OK);
    CU_ASSERT_FALSE(zkr_latch_has_leadership(la));
    CU_ASSERT_TRUE(zkt_wait_children(raw, path, 2, WAIT_MS)); /* a rejoined */
    zkr_participant_t *p = NULL;
    size_t n = participants(b, path, ZKR_ELECTION_LATCH, &p);
    CU_ASSERT_EQUAL_FATAL(n, 2);
    CU_ASSERT_STRING_EQUAL(p[0].id, "b");
    CU_ASSERT_EQUAL(p[0].session, session_of(b));
    CU_ASSERT_STRING_EQUAL(p[1].id, "a");
    CU_ASSERT_NOT_EQUAL(p[1].session, old_session);
    CU_ASSERT_EQUAL(p[1].session, session_of(a));
    zkr_participants_free(p, n);
    /* b leaves: a leads again, on its new session. */
    CU_ASSERT_EQUAL(zkr_latch_close(lb, ZKR_LATCH_CLOSE_SILENT), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_latch_await(la, WAIT_MS), ZKR_OK);
    zkr_participant_t *ld = NULL;
    CU_ASSERT_EQUAL(zkr_election_leader(b, path, ZKR_ELECTION_LATCH, &ld), ZKR_OK);
    CU_ASSERT_EQUAL(ld ? ld->session : 0, session_of(a));
    zkr_participants_free(ld, 1);
    pair_close(&pr);
}

/* A stall past the session timeout (LOST declared by the client, the old
 * session possibly still alive on the server for a moment): the latch is
 * not leader from LOST on, the other leads, and whenever the latch leads
 * again its node is of its current session (CURATOR-696). */
typedef struct owner_check {
    zkr_client_t *c;
    zkr_latch_t *l;
    const char *path;
    atomic_int bad, led;
} owner_check_t;

static int leads_on_own_session(void *arg)
{
    owner_check_t *k = arg;
    if (!zkr_latch_has_leadership(k->l))
        return 0;
    zkr_participant_t *ld = NULL;
    int64_t sid = 0;
    if (zkr_election_leader(k->c, k->path, ZKR_ELECTION_LATCH, &ld) == ZKR_OK &&
        zkr_client_session(k->c, &sid, NULL) == ZKR_OK && zkr_latch_has_leadership(k->l)) {
        atomic_store(&k->led, 1);
        if (ld->session != sid)
            atomic_fetch_add(&k->bad, 1);
    }
    zkr_participants_free(ld, ld ? 1 : 0);
    return atomic_load(&k->led);
}

static void test_latch_long_stall(void)
{
    char path[128];
    zkt_path("latch-stall", path, sizeof path);
    zhandle_t *raw = zkt_raw();
    zkt_proxy_t *px = zkt_proxy_start(zkt_server_port());
    CU_ASSERT_PTR_NOT_NULL_FATAL(px);
    zkr_client_t *a = zkt_client_at(zkt_proxy_hosts(px), SESSION_MS), *b = zkt_client(SESSION_MS);
    zkr_latch_t *la, *lb;
    told_t t;
    told_init(&t);
    CU_ASSERT_EQUAL_FATAL(zkr_latch_new(&la, a, path, "a"), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_latch_new(&lb, b, path, "b"), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_latch_set_policy(la, ZKR_LEADER_POLICY_SESSION), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_latch_set_listener(la, on_leader, &t), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_latch_start(la), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_latch_await(la, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_latch_start(lb), ZKR_OK);
    CU_ASSERT_TRUE(zkt_wait_children(raw, path, 2, WAIT_MS));
    int64_t old_session = session_of(a);
    CU_ASSERT_EQUAL(zkt_proxy_stall(px, 1), 0);
    int64_t t0 = zkt_now_ms();
    while (zkt_now_ms() - t0 < 3 * WAIT_MS && zkr_client_state(a) != ZKR_STATE_LOST)
        zkt_sleep_ms(20);
    CU_ASSERT_EQUAL(zkr_client_state(a), ZKR_STATE_LOST);
    CU_ASSERT_TRUE(zkt_wait_for(latch_not_leading, la, WAIT_MS)); /* LOST: not leader, whatever the policy */
    CU_ASSERT_TRUE(wait_told(&t, 2));
    CU_ASSERT_EQUAL(t.is_leader[1], 0);
    zkt_proxy_cut(px);
    CU_ASSERT_EQUAL(zkt_proxy_stall(px, 0), 0);
    CU_ASSERT_EQUAL(zkr_latch_await(lb, 2 * WAIT_MS), ZKR_OK);
    CU_ASSERT_TRUE(zkt_wait_children(raw, path, 2, WAIT_MS)); /* a rejoined, on a new session */
    CU_ASSERT_NOT_EQUAL(session_of(a), old_session);
    owner_check_t k = {.c = a, .l = la, .path = path};
    CU_ASSERT_EQUAL(zkr_latch_close(lb, ZKR_LATCH_CLOSE_SILENT), ZKR_OK);
    CU_ASSERT_TRUE(zkt_wait_for(leads_on_own_session, &k, WAIT_MS));
    CU_ASSERT_EQUAL(atomic_load(&k.bad), 0);
    CU_ASSERT_EQUAL(zkr_latch_close(la, ZKR_LATCH_CLOSE_SILENT), ZKR_OK);
    CU_ASSERT_TRUE(zkt_wait_children(raw, path, 0, WAIT_MS));
    zkr_latch_free(la);
    zkr_latch_free(lb);
    zkr_client_close(a);
    zkr_client_close(b);
    zkt_proxy_stop(px);
    zkt_raw_close(raw);
}

/* ---- no herd: every waiter watches its predecessor only --------------------------------- */

static void test_latch_herd(void)
{
    char path[128];
    zkt_path("latch-herd", path, sizeof path);
    zhandle_t *raw = zkt_raw();
    zkr_client_t *c[HERD_CLIENTS];
    zkr_latch_t *l[N_HERD];
    latches_join_on(path, raw, c, HERD_CLIENTS, l, N_HERD);
    CU_ASSERT_EQUAL(zkr_latch_await(l[0], WAIT_MS), ZKR_OK);
    /* N-1 waiters' data watches, one on each node but the last; none on the path. */
    int64_t t0 = zkt_now_ms();
    while (zkt_now_ms() - t0 < WAIT_MS && zkt_waiter_watches_under(path) != N_HERD - 1)
        zkt_sleep_ms(50);
    CU_ASSERT_EQUAL(zkt_waiter_watches_under(path), N_HERD - 1);
    CU_ASSERT_EQUAL(zkt_watch_count_on_exact(path), 0);
    zkr_participant_t *p = NULL;
    size_t n = participants(c[0], path, ZKR_ELECTION_LATCH, &p);
    CU_ASSERT_EQUAL_FATAL(n, N_HERD);
    for (size_t i = 0; i + 1 < n; i++)
        CU_ASSERT_EQUAL(zkt_watch_count_on_exact(p[i].node_path), 1);
    CU_ASSERT_EQUAL(zkt_watch_count_on_exact(p[n - 1].node_path), 0);
    /* The leader goes: one participant wakes; the other watches stay. */
    CU_ASSERT_EQUAL(zkr_latch_close(l[0], ZKR_LATCH_CLOSE_SILENT), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_latch_await(l[1], WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(zkt_waiter_watches_under(path), N_HERD - 2);
    for (size_t i = 1; i + 1 < n; i++)
        CU_ASSERT_EQUAL(zkt_watch_count_on_exact(p[i].node_path), 1);
    for (int i = 2; i < N_HERD; i++)
        CU_ASSERT_FALSE(zkr_latch_has_leadership(l[i]));
    zkr_participants_free(p, n);
    for (int i = 0; i < N_HERD; i++)
        zkr_latch_free(l[i]);
    for (int i = 0; i < HERD_CLIENTS; i++)
        zkr_client_close(c[i]);
    CU_ASSERT_TRUE(zkt_wait_children(raw, path, 0, WAIT_MS));
    zkt_raw_close(raw);
}

/* ---- the selector ------------------------------------------------------------------------ */

typedef struct sel_stats {
    atomic_int inside, max_inside, terms, stopped_by_wait;
    atomic_long last_token;
    atomic_int token_order_bad;
    int hold_ms; /* how long a term lasts unless told to stop */
} sel_stats_t;

static void take_leadership(zkr_selector_t *s, int64_t token, void *ctx)
{
    sel_stats_t *st = ctx;
    int in = atomic_fetch_add(&st->inside, 1) + 1;
    int m = atomic_load(&st->max_inside);
    while (in > m && !atomic_compare_exchange_weak(&st->max_inside, &m, in))
        ;
    if (token <= atomic_load(&st->last_token))
        atomic_fetch_add(&st->token_order_bad, 1);
    atomic_store(&st->last_token, token);
    int64_t check = 0;
    if (zkr_selector_fencing_token(s, &check) != ZKR_OK || check != token || !zkr_selector_has_leadership(s))
        atomic_fetch_add(&st->token_order_bad, 1);
    char *node = NULL; /* the term's node: its name ends with the term's sequence */
    if (zkr_selector_node_path(s, &node) != ZKR_OK || !node || !strstr(node, "lock-"))
        atomic_fetch_add(&st->token_order_bad, 1);
    zkr_free(node);
    if (zkr_selector_wait_stop(s, st->hold_ms) == ZKR_OK)
        atomic_fetch_add(&st->stopped_by_wait, 1);
    atomic_fetch_add(&st->terms, 1);
    atomic_fetch_sub(&st->inside, 1);
}

typedef struct terms_want {
    sel_stats_t *st;
    int n;
} terms_want_t;

static int terms_reached(void *arg)
{
    terms_want_t *w = arg;
    return atomic_load(&w->st->terms) >= w->n;
}

static void test_selector_terms(void)
{
    char path[128];
    zkt_path("selector", path, sizeof path);
    zhandle_t *raw = zkt_raw();
    enum { NS = 3 };
    zkr_client_t *c[NS];
    zkr_selector_t *s[NS];
    sel_stats_t st;
    memset(&st, 0, sizeof st);
    st.hold_ms = 100;
    for (int i = 0; i < NS; i++) {
        c[i] = zkt_client(SESSION_MS);
        CU_ASSERT_EQUAL_FATAL(zkr_selector_new(&s[i], c[i], path, i == 0 ? NULL : "sel", take_leadership, &st),
                              ZKR_OK);
        CU_ASSERT_EQUAL(zkr_selector_set_auto_requeue(s[i], 1), ZKR_OK);
    }
    for (int i = 0; i < NS; i++)
        CU_ASSERT_EQUAL(zkr_selector_start(s[i]), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_selector_start(s[0]), ZKR_ESTATE);
    terms_want_t w = {&st, 3 * NS};
    CU_ASSERT_TRUE(zkt_wait_for(terms_reached, &w, WAIT_MS));
    /* Wire: "lock-" nodes; data = the id, or the host's address. */
    zkr_participant_t *p = NULL;
    size_t n = participants(c[0], path, ZKR_ELECTION_SELECTOR, &p);
    CU_ASSERT_TRUE(n >= NS - 1); /* while one leads or hands over, the others queue */
    int host = 0, named = 0;
    for (size_t i = 0; i < n; i++) {
        CU_ASSERT_TRUE(protected_name(base_of(p[i].node_path), "lock-"));
        named += strcmp(p[i].id, "sel") == 0;
        host += strchr(p[i].id, '.') != NULL; /* no id: the host's IPv4 address */
    }
    CU_ASSERT_EQUAL(host + named, (int)n);
    zkr_participants_free(p, n);
    for (int i = 0; i < NS; i++)
        CU_ASSERT_EQUAL(zkr_selector_close(s[i]), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_selector_close(s[0]), ZKR_ESTATE);
    CU_ASSERT_EQUAL(atomic_load(&st.max_inside), 1); /* never two terms at once */
    CU_ASSERT_EQUAL(atomic_load(&st.token_order_bad), 0);
    CU_ASSERT_EQUAL(atomic_load(&st.inside), 0);
    CU_ASSERT_EQUAL(zkt_count_children(raw, path), 0);
    for (int i = 0; i < NS; i++) {
        zkr_selector_free(s[i]);
        zkr_client_close(c[i]);
    }
    zkt_raw_close(raw);
}

static void block_until_stop(zkr_selector_t *s, int64_t token, void *ctx)
{
    (void)token;
    sel_stats_t *st = ctx;
    atomic_fetch_add(&st->inside, 1);
    if (zkr_selector_wait_stop(s, WAIT_MS) == ZKR_OK && zkr_selector_should_stop(s))
        atomic_fetch_add(&st->stopped_by_wait, 1);
    atomic_fetch_add(&st->terms, 1);
    atomic_fetch_sub(&st->inside, 1);
}

static int inside_one(void *arg)
{
    return atomic_load(&((sel_stats_t *)arg)->inside) == 1;
}

/* Interrupt and a stall (hold IN_DOUBT) both tell the callback to stop;
 * without auto requeue one term per start or requeue. */
static void test_selector_told_to_stop(void)
{
    char path[128];
    zkt_path("selector-stop", path, sizeof path);
    zkt_proxy_t *px = zkt_proxy_start(zkt_server_port());
    CU_ASSERT_PTR_NOT_NULL_FATAL(px);
    zkr_client_t *c = zkt_client_at(zkt_proxy_hosts(px), SESSION_MS);
    zkr_selector_t *s;
    sel_stats_t st;
    memset(&st, 0, sizeof st);
    told_t t;
    told_init(&t);
    CU_ASSERT_EQUAL_FATAL(zkr_selector_new(&s, c, path, "one", block_until_stop, &st), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_selector_interrupt(s), ZKR_ENOTLEADER);
    CU_ASSERT_EQUAL(zkr_selector_requeue(s), ZKR_ESTATE);
    CU_ASSERT_EQUAL(zkr_selector_set_listener(s, on_leader_sel, &t), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_selector_start(s), ZKR_OK);
    CU_ASSERT_TRUE(zkt_wait_for(inside_one, &st, WAIT_MS));
    CU_ASSERT_EQUAL(zkr_selector_interrupt(s), ZKR_OK);
    terms_want_t w = {&st, 1};
    CU_ASSERT_TRUE(zkt_wait_for(terms_reached, &w, WAIT_MS));
    CU_ASSERT_EQUAL(atomic_load(&st.stopped_by_wait), 1);
    CU_ASSERT_TRUE(wait_told(&t, 2)); /* leader, then not */
    zkt_sleep_ms(200);
    CU_ASSERT_EQUAL(atomic_load(&st.terms), 1); /* no auto requeue */
    CU_ASSERT_EQUAL(zkr_selector_requeue(s), ZKR_OK);
    CU_ASSERT_TRUE(zkt_wait_for(inside_one, &st, WAIT_MS));
    CU_ASSERT_EQUAL(zkt_proxy_stall(px, 1), 0); /* the hold goes IN_DOUBT */
    w.n = 2;
    CU_ASSERT_TRUE(zkt_wait_for(terms_reached, &w, WAIT_MS));
    CU_ASSERT_EQUAL(atomic_load(&st.stopped_by_wait), 2);
    zkt_proxy_cut(px);
    CU_ASSERT_EQUAL(zkt_proxy_stall(px, 0), 0);
    CU_ASSERT_EQUAL(zkr_selector_close(s), ZKR_OK);
    zkr_selector_free(s);
    zkr_client_close(c);
    zkt_proxy_stop(px);
    zhandle_t *raw = zkt_raw();
    CU_ASSERT_TRUE(zkt_wait_children(raw, path, 0, WAIT_MS));
    zkt_raw_close(raw);
}

/* ---- one term asynchronously, cancel ---------------------------------------------------- */

typedef struct term_done {
    atomic_int done;
    int rc;
    zkr_hold_t *hold;
} term_done_t;

static void on_term(uint64_t acquire_id, int rc, zkr_hold_t *hold, void *ctx)
{
    (void)acquire_id;
    term_done_t *d = ctx;
    d->rc = rc;
    d->hold = hold;
    atomic_store(&d->done, 1);
}

static void test_async_term(void)
{
    char path[128];
    zkt_path("leader-async", path, sizeof path);
    zhandle_t *raw = zkt_raw();
    zkr_client_t *c = zkt_client(SESSION_MS);
    CU_ASSERT_EQUAL(zkr_client_set_dispatch(c, ZKR_DISPATCH_THREAD), ZKR_OK);
    term_done_t a = {0}, b = {0}, d = {0};
    uint64_t ida = 0, idb = 0, idd = 0;
    CU_ASSERT_EQUAL(zkr_leader_acquire_async(c, path, "a", -1, on_term, &a, &ida), ZKR_OK);
    CU_ASSERT_TRUE(zkt_wait_for(zkt_flag_set, &a.done, WAIT_MS));
    CU_ASSERT_EQUAL_FATAL(a.rc, ZKR_OK);
    CU_ASSERT_STRING_EQUAL(zkr_hold_kind(a.hold), "leader");
    char *np = NULL;
    CU_ASSERT_EQUAL(zkr_hold_node_path(a.hold, &np), ZKR_OK);
    CU_ASSERT_TRUE(np && protected_name(base_of(np), "latch-"));
    zkr_free(np);
    CU_ASSERT_EQUAL(zkr_hold_state(a.hold), ZKR_HOLD_SAFE);
    CU_ASSERT_EQUAL(zkr_leader_acquire_async(c, path, "b", -1, on_term, &b, &idb), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_leader_acquire_async(c, path, "d", -1, on_term, &d, &idd), ZKR_OK);
    CU_ASSERT_TRUE(zkt_wait_children(raw, path, 3, WAIT_MS));
    CU_ASSERT_EQUAL(zkr_async_cancel(c, idb), ZKR_OK);
    CU_ASSERT_TRUE(zkt_wait_for(zkt_flag_set, &b.done, WAIT_MS));
    CU_ASSERT_EQUAL(b.rc, ZKR_ECANCELED);
    CU_ASSERT_TRUE(zkt_wait_children(raw, path, 2, WAIT_MS));
    CU_ASSERT_EQUAL(atomic_load(&d.done), 0);
    /* The term proclaims a value, observers' and Curator's view of it. */
    CU_ASSERT_EQUAL(zkr_hold_proclaim(a.hold, "a@epoch-2"), ZKR_OK);
    zkr_participant_t *ld = NULL;
    CU_ASSERT_EQUAL(zkr_election_leader(c, path, ZKR_ELECTION_LATCH, &ld), ZKR_OK);
    CU_ASSERT_STRING_EQUAL(ld ? ld->id : "", "a@epoch-2");
    zkr_participants_free(ld, 1);
    int64_t ta = 0, td = 0;
    CU_ASSERT_EQUAL(zkr_hold_fencing_token(a.hold, &ta), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_hold_release(a.hold), ZKR_OK);
    CU_ASSERT_TRUE(zkt_wait_for(zkt_flag_set, &d.done, WAIT_MS));
    CU_ASSERT_EQUAL_FATAL(d.rc, ZKR_OK);
    CU_ASSERT_EQUAL(zkr_hold_fencing_token(d.hold, &td), ZKR_OK);
    CU_ASSERT_TRUE(td > ta);
    CU_ASSERT_EQUAL(zkr_hold_release(d.hold), ZKR_OK);
    CU_ASSERT_EQUAL(zkt_count_children(raw, path), 0);
    CU_ASSERT_EQUAL(zkr_async_cancel(c, ida), ZKR_ENOTFOUND);
    zkr_client_close(c);
    zkt_raw_close(raw);
}

/* ---- observing, proclaim ------------------------------------------------------------------ */

typedef struct seen {
    pthread_mutex_t mu;
    int n;
    int none[32];
    char id[32][32];
    int64_t token[32];
} seen_t;

static void on_observe(zkr_observer_t *observer, const zkr_participant_t *leader, void *ctx)
{
    (void)observer;
    seen_t *s = ctx;
    pthread_mutex_lock(&s->mu);
    if (s->n < 32) {
        s->none[s->n] = leader == NULL;
        snprintf(s->id[s->n], sizeof s->id[0], "%s", leader ? leader->id : "");
        s->token[s->n] = leader ? leader->token : 0;
        s->n++;
    }
    pthread_mutex_unlock(&s->mu);
}

typedef struct seen_want {
    seen_t *s;
    int n;
} seen_want_t;

static int seen_reached(void *arg)
{
    seen_want_t *w = arg;
    pthread_mutex_lock(&w->s->mu);
    int n = w->s->n;
    pthread_mutex_unlock(&w->s->mu);
    return n >= w->n;
}

/* The last change seen names a leader. */
static int seen_a_leader(void *arg)
{
    seen_t *s = arg;
    pthread_mutex_lock(&s->mu);
    int yes = s->n > 0 && !s->none[s->n - 1];
    pthread_mutex_unlock(&s->mu);
    return yes;
}

static int wait_seen(seen_t *s, int n)
{
    seen_want_t w = {s, n};
    return zkt_wait_for(seen_reached, &w, WAIT_MS);
}

static void test_observe_and_proclaim(void)
{
    char path[128];
    zkt_path("observe", path, sizeof path);
    zkr_client_t *oc = zkt_client(SESSION_MS), *a = zkt_client(SESSION_MS), *b = zkt_client(SESSION_MS);
    seen_t s;
    memset(&s, 0, sizeof s);
    pthread_mutex_init(&s.mu, NULL);
    zkr_observer_t *o;
    CU_ASSERT_EQUAL_FATAL(zkr_observer_new(&o, oc, path, ZKR_ELECTION_LATCH, on_observe, &s), ZKR_OK);
    CU_ASSERT_TRUE(wait_seen(&s, 1)); /* nobody yet (the path does not exist) */
    CU_ASSERT_TRUE(s.none[0]);
    zkr_latch_t *la, *lb;
    CU_ASSERT_EQUAL_FATAL(zkr_latch_new(&la, a, path, "a"), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_latch_new(&lb, b, path, "b"), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_latch_proclaim(la, "x"), ZKR_ENOTLEADER); /* not started */
    CU_ASSERT_EQUAL(zkr_latch_start(la), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_latch_await(la, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_latch_start(lb), ZKR_OK);
    zhandle_t *raw = zkt_raw();
    CU_ASSERT_TRUE(zkt_wait_children(raw, path, 2, WAIT_MS)); /* b queues before a leaves */
    zkt_raw_close(raw);
    int64_t ta = 0, tb = 0;
    CU_ASSERT_EQUAL(zkr_latch_fencing_token(la, &ta), ZKR_OK);
    CU_ASSERT_TRUE(wait_seen(&s, 2));
    CU_ASSERT_STRING_EQUAL(s.id[1], "a");
    CU_ASSERT_EQUAL(s.token[1], ta);
    /* proclaim: the leader's value changes, no new election */
    CU_ASSERT_EQUAL(zkr_latch_proclaim(lb, "b2"), ZKR_ENOTLEADER);
    CU_ASSERT_EQUAL(zkr_latch_proclaim(la, "a2"), ZKR_OK);
    CU_ASSERT_TRUE(wait_seen(&s, 3));
    CU_ASSERT_STRING_EQUAL(s.id[2], "a2");
    CU_ASSERT_EQUAL(s.token[2], ta);
    CU_ASSERT_TRUE(zkr_latch_has_leadership(la));
    /* hand-over: seen once */
    CU_ASSERT_EQUAL(zkr_latch_close(la, ZKR_LATCH_CLOSE_SILENT), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_latch_proclaim(la, "late"), ZKR_ENOTLEADER);
    CU_ASSERT_EQUAL(zkr_latch_await(lb, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_latch_fencing_token(lb, &tb), ZKR_OK);
    CU_ASSERT_TRUE(wait_seen(&s, 4));
    CU_ASSERT_STRING_EQUAL(s.id[3], "b");
    CU_ASSERT_EQUAL(s.token[3], tb);
    CU_ASSERT_TRUE(tb > ta);
    CU_ASSERT_EQUAL(zkr_latch_close(lb, ZKR_LATCH_CLOSE_SILENT), ZKR_OK);
    CU_ASSERT_TRUE(wait_seen(&s, 5));
    CU_ASSERT_TRUE(s.none[4]);
    zkt_sleep_ms(200);
    CU_ASSERT_EQUAL(s.n, 5); /* each change once */
    zkr_observer_free(o);
    zkr_latch_free(la);
    zkr_latch_free(lb);
    zkr_client_close(oc);
    zkr_client_close(a);
    zkr_client_close(b);
}

/* ---- guarded writes ----------------------------------------------------------------------- */

static int node_exists(zhandle_t *zh, const char *path)
{
    struct Stat st;
    return zoo_exists(zh, path, 0, &st) == ZOK;
}

static void test_guarded_writes(void)
{
    char path[128], data[160], data2[160];
    zkt_path("guard", path, sizeof path);
    snprintf(data, sizeof data, "%s-data", path);
    snprintf(data2, sizeof data2, "%s-data2", path);
    zhandle_t *raw = zkt_raw();
    zkr_client_t *c = zkt_client(SESSION_MS);
    zkr_mutex_t *m;
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&m, c, path), ZKR_OK);
    zkr_op_t ops[2] = {ZKR_OP_CREATE_INIT(data, "1", 1, ZKR_CREATE_PERSISTENT),
                       ZKR_OP_SET_INIT(data, "2", 1, -1)};
    CU_ASSERT_EQUAL(zkr_mutex_guarded_write(m, ops, 2), ZKR_ENOTOWNER); /* not held */
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_acquire(m, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_mutex_guarded_write(m, ops, 2), ZKR_OK);
    CU_ASSERT_STRING_EQUAL(ops[0].created ? ops[0].created : "", data);
    zkr_ops_clear(ops, 2);
    CU_ASSERT_PTR_NULL(ops[0].created);
    char buf[8];
    int len = sizeof buf;
    CU_ASSERT_EQUAL(zoo_get(raw, data, 0, buf, &len, NULL), ZOK);
    CU_ASSERT_TRUE(len == 1 && buf[0] == '2');
    /* One write refused: nothing written, its rc says why. */
    zkr_op_t bad[2] = {ZKR_OP_CREATE_INIT(data2, "", 0, 0), ZKR_OP_CREATE_INIT(data, "", 0, 0)};
    CU_ASSERT_EQUAL(zkr_lock_guarded_write(zkr_mutex_ref(m), bad, 2), ZKR_ENODEEXISTS);
    CU_ASSERT_EQUAL(bad[0].rc, ZKR_OK);
    CU_ASSERT_EQUAL(bad[1].rc, ZKR_ENODEEXISTS);
    CU_ASSERT_FALSE(node_exists(raw, data2));
    /* The hold is gone (its node deleted by someone): ZKR_EGUARD, nothing written. */
    char *mine = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_node_path(m, &mine), ZKR_OK);
    CU_ASSERT_EQUAL(zoo_delete(raw, mine, -1), ZOK);
    free(mine);
    zkr_op_t late[1] = {ZKR_OP_CREATE_INIT(data2, "", 0, 0)};
    int rc = zkr_mutex_guarded_write(m, late, 1);
    CU_ASSERT_EQUAL(rc, ZKR_EGUARD);
    CU_ASSERT_FALSE(node_exists(raw, data2));
    zkr_mutex_release(m);
    zkr_mutex_free(m);
    /* The guard checked by the server: a node that is not there, a session
     * that is not the client's. */
    CU_ASSERT_EQUAL(zkr_guarded_write(c, data2, 0, late, 1), ZKR_EGUARD);
    CU_ASSERT_EQUAL(zkr_guarded_write(c, path, session_of(c) + 1, late, 1), ZKR_EGUARD);
    CU_ASSERT_FALSE(node_exists(raw, data2));

    /* A lease, a latch's leadership. */
    zkr_semaphore_t *s;
    zkr_lease_t *lease = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_semaphore_new(&s, c, path, 2), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_semaphore_acquire(s, WAIT_MS, &lease), ZKR_OK);
    zkr_op_t del[1] = {ZKR_OP_DELETE_INIT(data, -1)};
    CU_ASSERT_EQUAL(zkr_lease_guarded_write(lease, del, 1), ZKR_OK);
    CU_ASSERT_FALSE(node_exists(raw, data));
    CU_ASSERT_EQUAL(zkr_lease_release(lease), ZKR_OK);
    zkr_semaphore_free(s);
    char lpath[160];
    snprintf(lpath, sizeof lpath, "%s-latch", path);
    zkr_latch_t *l;
    CU_ASSERT_EQUAL_FATAL(zkr_latch_new(&l, c, lpath, "g"), ZKR_OK);
    zkr_op_t mk[1] = {ZKR_OP_CREATE_INIT(data, "", 0, 0)};
    CU_ASSERT_EQUAL(zkr_latch_guarded_write(l, mk, 1), ZKR_ENOTLEADER);
    CU_ASSERT_EQUAL(zkr_latch_start(l), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_latch_await(l, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_latch_guarded_write(l, mk, 1), ZKR_OK);
    zkr_ops_clear(mk, 1);
    CU_ASSERT_TRUE(node_exists(raw, data));
    CU_ASSERT_EQUAL(zkr_latch_close(l, ZKR_LATCH_CLOSE_SILENT), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_latch_guarded_write(l, del, 1), ZKR_ENOTLEADER);
    CU_ASSERT_TRUE(node_exists(raw, data));
    zkr_latch_free(l);
    zoo_delete(raw, data, -1);
    zkr_client_close(c);
    zkt_raw_close(raw);
}

/* ---- a latch costs no thread; a failed join waits before the next ------------------------ */

static long threads_now(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long n = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "Threads:", 8) == 0)
            n = strtol(line + 8, NULL, 10);
    if (f)
        fclose(f);
    return n;
}

typedef struct latches {
    zkr_latch_t **l;
    int n;
} latches_t;

static int one_leads(void *arg)
{
    latches_t *a = arg;
    int leaders = 0;
    for (int i = 0; i < a->n; i++)
        leaders += zkr_latch_has_leadership(a->l[i]);
    return leaders == 1;
}

static void test_latch_no_thread(void)
{
    enum { N = 200 };
    char path[128];
    zkt_path("latch-threads", path, sizeof path);
    zhandle_t *raw = zkt_raw();
    zkr_client_t *c = zkt_client(SESSION_MS); /* dispatch mode: the default loop, never dispatched */
    zkr_latch_t *l[N];
    long before = threads_now();
    for (int i = 0; i < N; i++) {
        char id[16];
        snprintf(id, sizeof id, "t%d", i);
        CU_ASSERT_EQUAL_FATAL(zkr_latch_new(&l[i], c, path, id), ZKR_OK);
        CU_ASSERT_EQUAL(zkr_latch_start(l[i]), ZKR_OK);
    }
    CU_ASSERT_TRUE(zkt_wait_children(raw, path, N, WAIT_MS));
    latches_t all = {l, N};
    CU_ASSERT_TRUE(zkt_wait_for(one_leads, &all, WAIT_MS));
    long after = threads_now();
    CU_ASSERT_TRUE(before > 0 && after <= before + 1); /* 200 latches, no thread each */
    if (!(after <= before + 1))
        fprintf(stderr, "threads: %ld before, %ld with %d latches\n", before, after, N);
    /* The library's own acquires are never handed to the program's loop. */
    CU_ASSERT_EQUAL(zkr_client_dispatch(c), 0);
    for (int i = 0; i < N; i++) {
        CU_ASSERT_EQUAL(zkr_latch_close(l[i], ZKR_LATCH_CLOSE_SILENT), ZKR_OK);
        zkr_latch_free(l[i]);
    }
    CU_ASSERT_TRUE(zkt_wait_children(raw, path, 0, WAIT_MS));
    zkr_client_close(c);
    zkt_raw_close(raw);
}

/* The election's parent is an ephemeral node (no children allowed): every
 * join fails; the latch tries again after a growing pause, not in a tight
 * loop, and joins once the obstacle is gone. */
static void test_latch_join_retry_pause(void)
{
    char parent[128], path[160];
    zkt_path("latch-retry", parent, sizeof parent);
    snprintf(path, sizeof path, "%s/election", parent);
    zhandle_t *raw = zkt_raw();
    zhandle_t *blocker = zkt_raw();
    CU_ASSERT_EQUAL_FATAL(zoo_create(blocker, parent, "", 0, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL, NULL, 0), ZOK);
    zkr_client_t *c = zkt_client(SESSION_MS);
    zkr_latch_t *l;
    CU_ASSERT_EQUAL_FATAL(zkr_latch_new(&l, c, path, "r"), ZKR_OK);
    long long p0 = zkt_stat_value("mntr", "zk_packets_received");
    CU_ASSERT_EQUAL(zkr_latch_start(l), ZKR_OK);
    zkt_sleep_ms(1500);
    long long p1 = zkt_stat_value("mntr", "zk_packets_received");
    CU_ASSERT_FALSE(zkr_latch_has_leadership(l));
    /* paused 50, 100, 200, 400, 800 ms: a few attempts of a few requests */
    CU_ASSERT_TRUE(p0 >= 0 && p1 - p0 < 100);
    if (!(p1 - p0 < 100))
        fprintf(stderr, "requests in 1.5 s of failed joins: %lld\n", p1 - p0);
    zkt_raw_close(blocker); /* its ephemeral parent goes */
    CU_ASSERT_EQUAL(zkr_latch_await(l, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_latch_close(l, ZKR_LATCH_CLOSE_SILENT), ZKR_OK);
    zkr_latch_free(l);
    CU_ASSERT_TRUE(zkt_wait_children(raw, path, 0, WAIT_MS));
    zkr_client_close(c);
    zkt_raw_close(raw);
}

/* ---- closing from inside: the latch leaves at once, the selector refuses ------------------- */

typedef struct inside {
    zkr_latch_t *l;
    zkr_selector_t *s;
    atomic_int rc, done;
} inside_t;

static void close_from_listener(zkr_latch_t *latch, int is_leader, int64_t token, void *ctx)
{
    (void)latch;
    (void)token;
    inside_t *in = ctx;
    if (is_leader && !atomic_load(&in->done)) {
        atomic_store(&in->rc, zkr_latch_close(in->l, ZKR_LATCH_CLOSE_SILENT));
        atomic_store(&in->done, 1);
    }
}

static void close_from_term(zkr_selector_t *s, int64_t token, void *ctx)
{
    (void)token;
    inside_t *in = ctx;
    atomic_store(&in->rc, zkr_selector_close(s));
    atomic_store(&in->done, 1);
}

static void test_close_from_inside(void)
{
    char path[128], spath[160];
    zkt_path("close-inside", path, sizeof path);
    snprintf(spath, sizeof spath, "%s-sel", path);
    zhandle_t *raw = zkt_raw();
    zkr_client_t *c = zkt_client(SESSION_MS);
    inside_t a = {0}, b = {0};
    CU_ASSERT_EQUAL_FATAL(zkr_latch_new(&a.l, c, path, "x"), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_latch_set_listener(a.l, close_from_listener, &a), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_latch_start(a.l), ZKR_OK);
    CU_ASSERT_TRUE(zkt_wait_for(zkt_flag_set, &a.done, WAIT_MS));
    /* A latch closed from its own listener (the client thread) leaves
     * without waiting: not leader, its node deleted, closed. */
    CU_ASSERT_EQUAL(atomic_load(&a.rc), ZKR_OK);
    CU_ASSERT_FALSE(zkr_latch_has_leadership(a.l));
    CU_ASSERT_TRUE(zkt_wait_children(raw, path, 0, WAIT_MS));
    CU_ASSERT_EQUAL(zkr_latch_close(a.l, ZKR_LATCH_CLOSE_SILENT), ZKR_ESTATE);
    zkr_latch_free(a.l);
    CU_ASSERT_EQUAL_FATAL(zkr_selector_new(&b.s, c, spath, "y", close_from_term, &b), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_selector_start(b.s), ZKR_OK);
    CU_ASSERT_TRUE(zkt_wait_for(zkt_flag_set, &b.done, WAIT_MS));
    CU_ASSERT_EQUAL(atomic_load(&b.rc), ZKR_EDEADLK);
    CU_ASSERT_EQUAL(zkr_selector_close(b.s), ZKR_OK);
    zkr_selector_free(b.s);
    zkr_client_close(c);
    zkt_raw_close(raw);
}

/* ---- the client closes under running leader objects --------------------------------------- */

static void test_client_close_under_objects(void)
{
    char path[128], spath[160];
    zkt_path("leader-close", path, sizeof path);
    snprintf(spath, sizeof spath, "%s-sel", path);
    zhandle_t *raw = zkt_raw();
    zkr_client_t *c = zkt_client(SESSION_MS);
    zkr_latch_t *l;
    zkr_selector_t *s;
    zkr_observer_t *o;
    sel_stats_t st;
    memset(&st, 0, sizeof st);
    seen_t seen;
    memset(&seen, 0, sizeof seen);
    pthread_mutex_init(&seen.mu, NULL);
    told_t t;
    told_init(&t);
    CU_ASSERT_EQUAL_FATAL(zkr_latch_new(&l, c, path, "l"), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_selector_new(&s, c, spath, "s", block_until_stop, &st), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_observer_new(&o, c, path, ZKR_ELECTION_LATCH, on_observe, &seen), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_latch_set_listener(l, on_leader, &t), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_latch_start(l), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_selector_start(s), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_latch_await(l, WAIT_MS), ZKR_OK);
    CU_ASSERT_TRUE(zkt_wait_for(inside_one, &st, WAIT_MS));
    CU_ASSERT_TRUE(zkt_wait_for(seen_a_leader, &seen, WAIT_MS)); /* (nobody first, if it looked early) */
    /* The callback is told to stop when the client goes; close does not
     * wait for the leader objects, which are freed after it. */
    CU_ASSERT_EQUAL(zkr_client_close(c), ZKR_OK);
    terms_want_t w = {&st, 1};
    CU_ASSERT_TRUE(zkt_wait_for(terms_reached, &w, WAIT_MS));
    CU_ASSERT_TRUE(zkt_wait_for(latch_not_leading, l, WAIT_MS));
    CU_ASSERT_EQUAL(zkr_latch_await(l, 0), ZKR_ECLOSED);
    CU_ASSERT_EQUAL(zkr_latch_proclaim(l, "x"), ZKR_ENOTLEADER);
    CU_ASSERT_EQUAL(zkr_latch_close(l, ZKR_LATCH_CLOSE_NOTIFY_LEADER), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_selector_close(s), ZKR_OK);
    zkr_observer_free(o);
    zkr_latch_free(l);
    zkr_selector_free(s);
    CU_ASSERT_TRUE(zkt_wait_children(raw, path, 0, WAIT_MS)); /* the session's nodes went with it */
    CU_ASSERT_TRUE(zkt_wait_children(raw, spath, 0, WAIT_MS));
    zkt_raw_close(raw);
}

/* ---- bad input ------------------------------------------------------------------------------- */

static void dummy_take(zkr_selector_t *s, int64_t token, void *ctx)
{
    (void)s;
    (void)token;
    (void)ctx;
}

static void dummy_observe(zkr_observer_t *observer, const zkr_participant_t *leader, void *ctx)
{
    (void)observer;
    (void)leader;
    (void)ctx;
}

static void test_bad_input(void)
{
    zkr_client_t *c = zkt_client(SESSION_MS);
    zkr_latch_t *l = (zkr_latch_t *)1;
    CU_ASSERT_EQUAL(zkr_latch_new(NULL, c, "/a", "x"), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_latch_new(&l, NULL, "/a", "x"), ZKR_EINVAL);
    CU_ASSERT_PTR_NULL(l);
    CU_ASSERT_EQUAL(zkr_latch_new(&l, c, NULL, "x"), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_latch_new(&l, c, "a/b", "x"), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_latch_new(&l, c, "/a/", "x"), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_latch_new(&l, c, "/a", "\xff"), ZKR_EINVAL);        /* not UTF-8 */
    CU_ASSERT_EQUAL(zkr_latch_new(&l, c, "/a", "\xc0\xaf"), ZKR_EINVAL);    /* overlong */
    CU_ASSERT_EQUAL(zkr_latch_new(&l, c, "/a", "\xed\xa0\x80"), ZKR_EINVAL); /* a surrogate */
    CU_ASSERT_EQUAL(zkr_latch_new(&l, c, "/a", "\xe2\x82"), ZKR_EINVAL);    /* cut short */
    char *big = malloc(ZKR_LEADER_ID_MAX + 2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(big);
    memset(big, 'x', ZKR_LEADER_ID_MAX + 1);
    big[ZKR_LEADER_ID_MAX + 1] = '\0';
    CU_ASSERT_EQUAL(zkr_latch_new(&l, c, "/a", big), ZKR_EINVAL); /* too large for a node */
    zkr_selector_t *s = NULL;
    CU_ASSERT_EQUAL(zkr_selector_new(&s, c, "/a", big, dummy_take, NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_selector_new(&s, c, "/a", "x", NULL, NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_leader_acquire_async(c, "/a", "\xff", 0, NULL, NULL, NULL), ZKR_EINVAL);
    zkr_observer_t *o = NULL;
    CU_ASSERT_EQUAL(zkr_observer_new(&o, c, "/a", (zkr_election_kind_t)7, dummy_observe, NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_observer_new(&o, c, "/a", ZKR_ELECTION_LATCH, NULL, NULL), ZKR_EINVAL);
    zkr_participant_t *p = NULL;
    size_t n = 0;
    CU_ASSERT_EQUAL(zkr_election_participants(c, "bad", ZKR_ELECTION_LATCH, &p, &n), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_election_participants(NULL, "/a", ZKR_ELECTION_LATCH, &p, &n), ZKR_EINVAL);

    /* NULL objects */
    CU_ASSERT_EQUAL(zkr_latch_start(NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_latch_await(NULL, 0), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_latch_close(NULL, ZKR_LATCH_CLOSE_SILENT), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_latch_proclaim(NULL, "x"), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_latch_has_leadership(NULL), 0);
    CU_ASSERT_STRING_EQUAL(zkr_latch_id(NULL), "");
    CU_ASSERT_EQUAL(zkr_selector_start(NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_selector_close(NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_selector_should_stop(NULL), 1);
    CU_ASSERT_EQUAL(zkr_hold_proclaim(NULL, "x"), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_guarded_write(c, "/a", 0, NULL, 1), ZKR_EINVAL);
    zkr_op_t op = ZKR_OP_SET_INIT("bad path", "x", 1, -1);
    CU_ASSERT_EQUAL(zkr_guarded_write(c, "/a", 0, &op, 1), ZKR_EINVAL);
    zkr_latch_free(NULL);
    zkr_selector_free(NULL);
    zkr_observer_free(NULL);
    zkr_participants_free(NULL, 3);

    /* proclaim: bad values; a valid latch that is not leader */
    char path[128];
    zkt_path("bad-input", path, sizeof path);
    CU_ASSERT_EQUAL_FATAL(zkr_latch_new(&l, c, path, "ok"), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_latch_set_policy(l, (zkr_leader_policy_t)9), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_latch_proclaim(l, big), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_latch_proclaim(l, "\xff"), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_latch_proclaim(l, "fine"), ZKR_ENOTLEADER);
    CU_ASSERT_EQUAL(zkr_latch_close(l, (zkr_latch_close_mode_t)5), ZKR_EINVAL);
    zkr_latch_free(l); /* never started */
    free(big);
    zkr_client_close(c);
}

/* A listener set after the start, while the latch leads: told the changes
 * after the call only (not the leadership it already had), like every
 * listener of the library. */
static void test_listener_after_start(void)
{
    char path[128];
    zkt_path("latch-late-listener", path, sizeof path);
    zkr_client_t *c = zkt_client(SESSION_MS);
    zkr_latch_t *l;
    told_t t;
    told_init(&t);
    CU_ASSERT_EQUAL_FATAL(zkr_latch_new(&l, c, path, "late"), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_latch_start(l), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_latch_await(l, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_latch_set_listener(l, on_leader, &t), ZKR_OK);
    zkt_sleep_ms(200); /* time for a wrong replay of "leader" to show */
    CU_ASSERT_EQUAL(told_count(&t), 0);
    CU_ASSERT_EQUAL(zkr_latch_close(l, ZKR_LATCH_CLOSE_NOTIFY_LEADER), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(told_count(&t), 1);
    CU_ASSERT_EQUAL(t.is_leader[0], 0);
    zkr_latch_free(l);
    zkr_client_close(c);
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("leader", NULL, NULL);
    CU_add_test(s, "latch alone: wire form, token, listener, close twice, nothing left", test_latch_alone);
    CU_add_test(s, "latch: SILENT close tells nothing; default id is zero bytes", test_latch_silent_default_id);
    CU_add_test(s, "latches: at most one leader, hand-over in join order, tokens increase", test_latch_handover);
    CU_add_test(s, "latches on one client: combined creates, each node with its id", test_latch_ids_combined);
    CU_add_test(s, "200 latches on one client: no thread each, nothing for the program's dispatch",
                test_latch_no_thread);
    CU_add_test(s, "latch: failed joins paused (not a tight loop), joined once possible", test_latch_join_retry_pause);
    CU_add_test(s, "latch: outside deletion of the leader's node, the path deleted", test_latch_outside_deletion);
    CU_add_test(s, "latch: SUSPENDED ends leadership (standard policy), RECONNECTED restores it",
                test_latch_suspended_standard);
    CU_add_test(s, "latch: session policy keeps leadership through SUSPENDED", test_latch_suspended_session_policy);
    CU_add_test(s, "latch: LOST gives leadership up and rejoins on the new session", test_latch_lost_rejoins);
    CU_add_test(s, "latch: a stall past the session: LOST, the other leads, rejoin on the new session",
                test_latch_long_stall);
    CU_add_test(s, "latch: no herd, 100 participants: a leader change wakes one", test_latch_herd);
    CU_add_test(s, "selector: never two terms at once, auto requeue, lock- nodes with data", test_selector_terms);
    CU_add_test(s, "selector: interrupt and IN_DOUBT tell the callback to stop", test_selector_told_to_stop);
    CU_add_test(s, "one term asynchronously: completion, cancel, proclaim, tokens", test_async_term);
    CU_add_test(s, "observer sees each change; proclaim by leader only", test_observe_and_proclaim);
    CU_add_test(s, "guarded writes: applied while held, refused and nothing written when gone",
                test_guarded_writes);
    CU_add_test(s, "a listener set after the start: told what comes after it", test_listener_after_start);
    CU_add_test(s, "close from the latch's listener: it leaves; from the selector's callback: ZKR_EDEADLK",
                test_close_from_inside);
    CU_add_test(s, "the client closes under a leading latch, a running term and an observer",
                test_client_close_under_objects);
    CU_add_test(s, "bad input: NULL, bad paths, bad ids, proclaim when not leader", test_bad_input);
}

int main(void)
{
    return zkt_main("test_leader", add_suites);
}

/* Leader election under faults: 4 processes in one election, each with its
 * own client, through its own proxy to the standalone server (a stall
 * shorter and one longer than the session timeout, a cut, a server
 * restart, an outside deletion of the leader's node, a forced expiry of the
 * leader's session) or on a 3-node ensemble (the ZooKeeper leader killed
 * twice, a forced expiry): latches (standard and session policy),
 * selectors with auto requeue, and latches that leave and rejoin under
 * random faults.  Each worker logs the terms it is told of into shared
 * memory; the checker: two workers believe they lead at once only if the
 * earlier had been told it was not (or, under the session policy, that its
 * connection was in doubt) before the later was told it leads, or the
 * earlier's session or node was closed from outside and it learnt so within
 * a session timeout; successive terms' tokens increase; someone leads
 * again after the last fault; nothing is left after close. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tests/harness/zkfaults.h"
#include "tests/harness/zkproxy.h"
#include "tests/harness/zkr_test.h"

#define WORKERS 4
#define MAX_TERMS 4000
#define SESSION_MS 3000
#define ENS_SESSION_MS 6000
#define WORKER_LIFE_MS 170000 /* a worker leaves by itself after this */
#define WAIT_MS 15000         /* bound for what must happen soon */

/* The workloads: latches (even workers under the session policy, odd
 * ones under the standard policy), selectors with auto requeue, latches
 * that leave after a short term (or a while queued) and join again. */
enum { W_LATCH, W_SELECTOR, W_MIXED };

/* How a term ended. */
enum { END_OPEN, END_TOLD, END_STOP, END_DONE, END_CLOSE, END_RESUMED };
static const char *const end_names[] = {"never",           "told not leader", "told to stop",
                                        "term over",       "left (close)",    "reconnected"};

/* One term as its worker believed it. */
typedef struct term {
    int worker;
    int selector;       /* a selector's term, else a latch's */
    int gen;            /* the worker's latch (a new one after each close) */
    int session_policy; /* the latch's policy: in doubt is not "not leader" */
    int how;            /* END_* */
    int64_t token;
    int64_t lead_ms;  /* told leader (latch listener), entered (selector callback) */
    int64_t end_ms;   /* told not leader or to stop, the term over, or close called */
    int64_t doubt_ms; /* session policy: told SUSPENDED or LOST during the term */
    int64_t susp_ms;  /* any policy: the client told SUSPENDED or LOST (printed) */
} term_t;

/* What a worker shows the parent while it runs. */
typedef struct wslot {
    atomic_uint seq; /* session and passwd: odd while written */
    _Atomic long long session;
    atomic_ullong passwd[2]; /* 16 bytes, in two atomic words (no fences: ThreadSanitizer) */
    atomic_int go;      /* the parent lets it join */
    atomic_int ready;   /* connected and in the election */
    atomic_int leading; /* believes it leads now */
    atomic_int terms;
    _Atomic long long last_lead_ms;
    atomic_int state; /* the client's last state told */
    _Atomic long long state_ms;
    atomic_int told[7]; /* client states told, by state */
    atomic_int gens;    /* latches made */
    atomic_int stops;   /* selector: terms told to stop */
    atomic_int sel_told[2]; /* selector listener: "not leader", "leader" */
} wslot_t;

typedef struct shared {
    atomic_int stop;
    atomic_int nterms;
    atomic_int errors;
    wslot_t w[WORKERS];
    term_t t[MAX_TERMS];
} shared_t;

static shared_t *sh;

/* ---- a worker (a forked process: no CUnit here) ------------------------------------ */

static struct {
    pthread_mutex_t mu; /* the fields below; the listeners run on the client's thread */
    int id, kind;
    pid_t parent;
    zkr_client_t *c;
    unsigned seed;
    int in_term;
    term_t *cur;     /* NULL when in_term and the log is full */
    int lost;        /* LOST told during the current term */
    int gen;         /* the latch now */
    int closing;     /* it is being closed: what it is told is not believed */
    int close_told;  /* "not leader" told while closing */
} me = {.mu = PTHREAD_MUTEX_INITIALIZER};

#define werror(...)                                                                                 \
    do {                                                                                            \
        fprintf(stderr, "worker %d at %lld: ", me.id, (long long)zkt_now_ms());                    \
        fprintf(stderr, __VA_ARGS__);                                                               \
        fputc('\n', stderr);                                                                        \
        atomic_fetch_add(&sh->errors, 1);                                                           \
    } while (0)

static int session_policy(int id, int kind)
{
    return kind != W_SELECTOR && id % 2 == 0;
}

/* mu held */
static void term_open_locked(int64_t token)
{
    int64_t now = zkt_now_ms();
    int slot = atomic_fetch_add(&sh->nterms, 1);
    term_t *t = slot < MAX_TERMS ? &sh->t[slot] : NULL;
    if (t) {
        memset(t, 0, sizeof *t);
        t->worker = me.id;
        t->selector = me.kind == W_SELECTOR;
        t->gen = me.gen;
        t->session_policy = session_policy(me.id, me.kind);
        t->token = token;
        t->lead_ms = now;
        int st = atomic_load(&sh->w[me.id].state); /* the last state told */
        if (t->session_policy && (st == ZKR_STATE_SUSPENDED || st == ZKR_STATE_LOST))
            t->doubt_ms = now; /* leading while in doubt from the start */
    }
    me.cur = t;
    me.in_term = 1;
    me.lost = 0;
    wslot_t *w = &sh->w[me.id];
    atomic_fetch_add(&w->terms, 1);
    atomic_store(&w->last_lead_ms, (long long)now);
    atomic_store(&w->leading, 1);
}

/* mu held */
static void term_close_locked(int how)
{
    if (me.cur) {
        me.cur->end_ms = zkt_now_ms();
        me.cur->how = how;
    }
    me.cur = NULL;
    me.in_term = 0;
    atomic_store(&sh->w[me.id].leading, 0);
}

static void publish_session(void)
{
    int64_t id = 0;
    char pw[16];
    if (zkr_client_session(me.c, &id, pw) != ZKR_OK)
        return;
    wslot_t *w = &sh->w[me.id];
    unsigned long long words[2];
    memcpy(words, pw, sizeof words);
    if (id == atomic_load(&w->session) && words[0] == atomic_load(&w->passwd[0]) &&
        words[1] == atomic_load(&w->passwd[1]))
        return;
    atomic_fetch_add(&w->seq, 1);
    atomic_store(&w->session, (long long)id);
    atomic_store(&w->passwd[0], words[0]);
    atomic_store(&w->passwd[1], words[1]);
    atomic_fetch_add(&w->seq, 1);
}

static int should_leave(int64_t life_end)
{
    return atomic_load(&sh->stop) || zkt_now_ms() >= life_end || getppid() != me.parent;
}

/* The client's states: in doubt while leading under the session policy,
 * and, after RECONNECTED on the same session, a term that carries on with
 * nothing in doubt (a new piece of it, the same token). */
static void on_state(zkr_client_t *c, zkr_state_t st, void *ctx)
{
    (void)c;
    (void)ctx;
    wslot_t *w = &sh->w[me.id];
    pthread_mutex_lock(&me.mu);
    atomic_store(&w->state, (int)st);
    atomic_store(&w->state_ms, (long long)zkt_now_ms());
    if ((int)st >= 0 && (int)st < 7)
        atomic_fetch_add(&w->told[st], 1);
    term_t *t = me.cur;
    if (t && (st == ZKR_STATE_SUSPENDED || st == ZKR_STATE_LOST)) {
        int64_t now = zkt_now_ms();
        if (!t->susp_ms)
            t->susp_ms = now;
        if (t->session_policy && !t->doubt_ms)
            t->doubt_ms = now;
        me.lost |= st == ZKR_STATE_LOST;
    } else if (t && st == ZKR_STATE_RECONNECTED && t->session_policy && t->doubt_ms && !me.lost) {
        int64_t token = t->token;
        term_close_locked(END_RESUMED);
        term_open_locked(token);
    }
    pthread_mutex_unlock(&me.mu);
}

/* The latch's listener; ctx is the latch's generation. */
static void on_latch(zkr_latch_t *latch, int is_leader, int64_t token, void *ctx)
{
    (void)latch;
    int gen = (int)(intptr_t)ctx;
    pthread_mutex_lock(&me.mu);
    if (gen != me.gen) {
        werror("latch %d told %d after its close returned", gen, is_leader);
    } else if (me.closing) {
        me.close_told += !is_leader; /* leaving: not believed */
    } else if (is_leader) {
        if (me.in_term)
            werror("told leader (token %lld) while leading", (long long)token);
        else if (token <= 0)
            werror("told leader with token %lld", (long long)token);
        else
            term_open_locked(token);
    } else if (me.in_term) {
        term_close_locked(END_TOLD);
    }
    pthread_mutex_unlock(&me.mu);
}

static void latch_worker(const char *path, int64_t life_end)
{
    char id[16];
    snprintf(id, sizeof id, "w%d", me.id);
    while (!should_leave(life_end)) {
        zkr_latch_t *l = NULL;
        int rc = zkr_latch_new(&l, me.c, path, id);
        if (rc == ZKR_OK)
            rc = zkr_latch_set_policy(l, session_policy(me.id, me.kind) ? ZKR_LEADER_POLICY_SESSION
                                                                        : ZKR_LEADER_POLICY_STANDARD);
        if (rc == ZKR_OK)
            rc = zkr_latch_set_listener(l, on_latch, (void *)(intptr_t)me.gen);
        if (rc == ZKR_OK)
            rc = zkr_latch_start(l);
        if (rc != ZKR_OK) {
            werror("latch: %s", zkr_strerror(rc));
            zkr_latch_free(l);
            return;
        }
        atomic_fetch_add(&sh->w[me.id].gens, 1);
        atomic_store(&sh->w[me.id].ready, 1);
        /* mixed: leave after a short term, or after a while queued */
        int64_t queued_until = zkt_now_ms() + 800 + (int64_t)(rand_r(&me.seed) % 2500);
        int64_t hold_ms = 30 + (int64_t)(rand_r(&me.seed) % 300);
        while (!should_leave(life_end)) {
            publish_session();
            if (me.kind == W_MIXED) {
                pthread_mutex_lock(&me.mu);
                int64_t since = me.in_term ? (int64_t)atomic_load(&sh->w[me.id].last_lead_ms) : 0;
                pthread_mutex_unlock(&me.mu);
                int64_t now = zkt_now_ms();
                if ((since && now - since >= hold_ms) || (!since && now >= queued_until))
                    break;
            }
            zkt_sleep_ms(10);
        }
        /* Leaving: the program stops believing it leads before it closes. */
        pthread_mutex_lock(&me.mu);
        int was = me.in_term;
        if (was)
            term_close_locked(END_CLOSE);
        me.closing = 1;
        me.close_told = 0;
        pthread_mutex_unlock(&me.mu);
        rc = zkr_latch_close(l, ZKR_LATCH_CLOSE_NOTIFY_LEADER);
        if (rc != ZKR_OK)
            werror("latch close: %s", zkr_strerror(rc));
        pthread_mutex_lock(&me.mu);
        if (was && me.close_told == 0)
            werror("close (NOTIFY_LEADER) of the leading latch %d told nothing", me.gen);
        me.gen++;
        me.closing = 0;
        pthread_mutex_unlock(&me.mu);
        zkr_latch_free(l);
    }
}

static void on_selector(zkr_selector_t *sel, int is_leader, int64_t token, void *ctx)
{
    (void)sel;
    (void)token;
    (void)ctx;
    atomic_fetch_add(&sh->w[me.id].sel_told[is_leader != 0], 1);
}

/* A term: until told to stop, or a short random time. */
static void take_leadership(zkr_selector_t *s, int64_t token, void *ctx)
{
    (void)ctx;
    int stop0 = zkr_selector_should_stop(s);
    int64_t own = 0;
    int trc = zkr_selector_fencing_token(s, &own);
    pthread_mutex_lock(&me.mu);
    int ms = 20 + (int)(rand_r(&me.seed) % 200);
    if (me.in_term)
        werror("callback entered while in a term");
    term_open_locked(token);
    if (stop0 && me.cur && !me.cur->doubt_ms)
        me.cur->doubt_ms = me.cur->lead_ms; /* entered already told to stop */
    pthread_mutex_unlock(&me.mu);
    if (token <= 0 || (trc == ZKR_OK && own != token))
        werror("callback token %lld, zkr_selector_fencing_token %lld", (long long)token, (long long)own);
    int rc = zkr_selector_wait_stop(s, ms);
    pthread_mutex_lock(&me.mu);
    term_close_locked(rc == ZKR_OK ? END_STOP : END_DONE);
    pthread_mutex_unlock(&me.mu);
    if (rc == ZKR_OK)
        atomic_fetch_add(&sh->w[me.id].stops, 1);
}

static void selector_worker(const char *path, int64_t life_end)
{
    char id[16];
    snprintf(id, sizeof id, "w%d", me.id);
    zkr_selector_t *s = NULL;
    int rc = zkr_selector_new(&s, me.c, path, id, take_leadership, NULL);
    if (rc == ZKR_OK)
        rc = zkr_selector_set_auto_requeue(s, 1);
    if (rc == ZKR_OK)
        rc = zkr_selector_set_listener(s, on_selector, NULL);
    if (rc == ZKR_OK)
        rc = zkr_selector_start(s);
    if (rc != ZKR_OK) {
        werror("selector: %s", zkr_strerror(rc));
        zkr_selector_free(s);
        return;
    }
    atomic_store(&sh->w[me.id].ready, 1);
    while (!should_leave(life_end)) {
        publish_session();
        zkt_sleep_ms(10);
    }
    rc = zkr_selector_close(s);
    if (rc != ZKR_OK)
        werror("selector close: %s", zkr_strerror(rc));
    /* the listener was told "leader" and "not leader" once a term */
    wslot_t *w = &sh->w[me.id];
    int terms = atomic_load(&w->terms);
    if (atomic_load(&w->sel_told[1]) != terms || atomic_load(&w->sel_told[0]) != terms)
        werror("selector listener told leader %d and not leader %d times for %d terms",
               atomic_load(&w->sel_told[1]), atomic_load(&w->sel_told[0]), terms);
    zkr_selector_free(s);
}

static void worker(int id, int kind, const char *hosts, const char *path, int session_ms, pid_t parent)
{
    me.id = id;
    me.kind = kind;
    me.parent = parent;
    me.seed = (unsigned)getpid() ^ (unsigned)zkt_now_ms();
    int64_t life_end = zkt_now_ms() + WORKER_LIFE_MS;
    zkr_client_options_t o;
    zkr_client_options_init(&o);
    o.session_timeout_ms = session_ms;
    o.connect_timeout_ms = 20000;
    o.zk_log_level = 0;
    if (zkr_client_open(&me.c, hosts, &o) != ZKR_OK)
        _exit(2);
    if (zkr_client_add_listener(me.c, on_state, NULL) != ZKR_OK)
        _exit(3);
    publish_session();
    while (!atomic_load(&sh->w[id].go) && !should_leave(life_end))
        zkt_sleep_ms(5);
    if (kind == W_SELECTOR)
        selector_worker(path, life_end);
    else
        latch_worker(path, life_end);
    pthread_mutex_lock(&me.mu);
    if (me.in_term)
        werror("still in a term after leaving");
    pthread_mutex_unlock(&me.mu);
    zkr_client_close(me.c);
    _exit(0);
}

/* ---- the checker ----------------------------------------------------------------------- */

static int cmp_lead(const void *a, const void *b)
{
    const term_t *x = a, *y = b;
    if (x->lead_ms != y->lead_ms)
        return (x->lead_ms > y->lead_ms) - (x->lead_ms < y->lead_ms);
    return (x->token > y->token) - (x->token < y->token);
}

/* A session or node closed from outside excuses the overlap of terms a
 * and b (b told leader while a believed it led) if the fault hit one of
 * them, b was told inside it (or within `bound` after it), and the
 * victim stopped believing (told, or in doubt) within the bound. */
static int outside_closed(const term_t *a, const term_t *b, int64_t bound, int64_t *lag)
{
    for (int f = 0; (f = zkt_fault_outside(a->worker, b->worker, b->lead_ms, bound, f)) >= 0; f++) {
        const zkt_fault_t *m = zkt_fault_get(f);
        const term_t *v = a->worker == m->worker ? a : b;
        int64_t learnt = v->doubt_ms && (!v->end_ms || v->doubt_ms < v->end_ms) ? v->doubt_ms : v->end_ms;
        if (learnt && learnt <= m->end + bound) {
            if (learnt - m->end > *lag)
                *lag = learnt - m->end;
            return f;
        }
    }
    return -1;
}

static void print_term(const char *label, const term_t *t, int64_t ref)
{
    char what[48];
    if (t->selector)
        snprintf(what, sizeof what, "selector");
    else
        snprintf(what, sizeof what, "latch %d, %s policy", t->gen, t->session_policy ? "session" : "standard");
    fprintf(stderr, "  %s: worker %d (%s) token %lld led %+lld, ended %+lld (%s), in doubt %s%+lld, "
            "client suspended %s%+lld\n", label, t->worker, what, (long long)t->token, (long long)(t->lead_ms - ref),
            t->end_ms ? (long long)(t->end_ms - ref) : 0LL, end_names[t->how], t->doubt_ms ? "" : "never ",
            t->doubt_ms ? (long long)(t->doubt_ms - ref) : 0LL, t->susp_ms ? "" : "never ",
            t->susp_ms ? (long long)(t->susp_ms - ref) : 0LL);
}

/* (1) overlaps only with an excuse, (2) tokens increase. */
static void check_terms(int n, int64_t bound)
{
    term_t *t = malloc((size_t)(n > 0 ? n : 1) * sizeof *t);
    CU_ASSERT_PTR_NOT_NULL(t);
    if (!t)
        return;
    memcpy(t, sh->t, (size_t)n * sizeof *t);
    qsort(t, (size_t)n, sizeof *t, cmp_lead);
    int unended = 0, bad_overlap = 0, in_doubt = 0, outside = 0, bad_token = 0, resumed = 0;
    int64_t max_token = 0, lag = 0;
    int max_worker = -1;
    const char *all = getenv("ZKR_TERMS"); /* print every term, and the faults */
    for (int j = 0; all && *all && j < n; j++)
        print_term("term", &t[j], t[0].lead_ms);
    if (all && *all && n > 0)
        zkt_faults_print(stderr, t[0].lead_ms);
    for (int j = 0; j < n; j++) {
        if (!t[j].end_ms) {
            unended++;
            print_term("a term that never ended", &t[j], t[j].lead_ms);
        }
        for (int i = 0; i < j; i++) {
            if (t[i].worker == t[j].worker || (t[i].end_ms && t[i].end_ms <= t[j].lead_ms))
                continue;
            if (t[i].doubt_ms && t[i].doubt_ms <= t[j].lead_ms) {
                in_doubt++;
            } else if (outside_closed(&t[i], &t[j], bound, &lag) >= 0) {
                outside++;
            } else {
                bad_overlap++;
                fprintf(stderr, "two leaders: worker %d was told it leads while worker %d believed it led, "
                        "not told otherwise (times in ms from the later term's start):\n",
                        t[j].worker, t[i].worker);
                print_term("earlier", &t[i], t[j].lead_ms);
                print_term("later", &t[j], t[j].lead_ms);
                zkt_faults_print(stderr, t[j].lead_ms);
            }
        }
        if (t[j].token > max_token) {
            max_token = t[j].token;
            max_worker = t[j].worker;
        } else if (t[j].token == max_token && t[j].worker == max_worker) {
            resumed++; /* the same node leads again (back from in doubt) */
        } else {
            bad_token++;
            fprintf(stderr, "token %lld (worker %d, led at %lld) after %lld (worker %d)\n", (long long)t[j].token,
                    t[j].worker, (long long)t[j].lead_ms, (long long)max_token, max_worker);
        }
    }
    printf("    %d terms (%d the same node again); overlaps after the earlier was told it was in doubt: %d; "
           "with a worker whose session or node was closed from outside (it learnt within %lld ms; here at most "
           "%lld ms after the fault): %d; unexcused: %d; token inversions: %d; terms never ended: %d\n",
           n, resumed, in_doubt, (long long)bound, (long long)lag, outside, bad_overlap, bad_token, unended);
    CU_ASSERT_EQUAL(bad_overlap, 0);
    CU_ASSERT_EQUAL(bad_token, 0);
    CU_ASSERT_EQUAL(unended, 0);
    free(t);
}

/* ---- the parent: diagnostics and faults ------------------------------------------------- */

static void print_workers(void)
{
    int64_t now = zkt_now_ms();
    for (int w = 0; w < WORKERS; w++) {
        wslot_t *s = &sh->w[w];
        long long last = atomic_load(&s->last_lead_ms), told = atomic_load(&s->state_ms);
        fprintf(stderr, "  worker %d session 0x%llx leading %d, %d terms (the last began %lld ms ago), %d latches, "
                "%d told to stop; client told %s %lld ms ago; told SUSPENDED %d, RECONNECTED %d, LOST %d\n", w,
                (long long)atomic_load(&s->session), atomic_load(&s->leading), atomic_load(&s->terms),
                last ? (long long)(now - last) : -1LL, atomic_load(&s->gens), atomic_load(&s->stops),
                told ? zkr_state_name((zkr_state_t)atomic_load(&s->state)) : "nothing", told ? now - told : -1LL,
                atomic_load(&s->told[ZKR_STATE_SUSPENDED]), atomic_load(&s->told[ZKR_STATE_RECONNECTED]),
                atomic_load(&s->told[ZKR_STATE_LOST]));
    }
}

static int read_session(int w, int64_t *id, char pw[16])
{
    wslot_t *s = &sh->w[w];
    for (int i = 0; i < 200; i++) {
        unsigned s1 = atomic_load(&s->seq);
        if (!(s1 & 1)) {
            *id = atomic_load(&s->session);
            unsigned long long words[2] = {atomic_load(&s->passwd[0]), atomic_load(&s->passwd[1])};
            memcpy(pw, words, sizeof words);
            if (atomic_load(&s->seq) == s1) /* (every access seq_cst: no fence needed) */
                return *id != 0;
        }
        zkt_sleep_ms(1);
    }
    return 0;
}

/* The one worker that leads (bounded); -1 (the test fails) if none does. */
static int wait_leader(void)
{
    int64_t end = zkt_now_ms() + WAIT_MS;
    do {
        int n = 0, who = -1;
        for (int w = 0; w < WORKERS; w++)
            if (atomic_load(&sh->w[w].leading)) {
                n++;
                who = w;
            }
        if (n == 1)
            return who;
        zkt_sleep_ms(5);
    } while (zkt_now_ms() < end);
    fprintf(stderr, "no single leader within %d ms\n", WAIT_MS);
    print_workers();
    CU_FAIL("no single leader");
    return -1;
}

typedef struct run {
    const char *hosts; /* the server or the ensemble, direct */
    const char *path;
    int session_ms;
    zkt_proxy_t *px[WORKERS];
    zhandle_t *raw; /* the parent's own handle on the server */
    unsigned seed;  /* the random faults' */
} run_t;

enum { F_SHORT_STALL, F_LONG_STALL, F_CUT, F_RESTART, F_DELETE, F_EXPIRE, F_KILL_LEADER };

static int suspended(void *arg)
{
    return atomic_load(&sh->w[*(int *)arg].state) == ZKR_STATE_SUSPENDED;
}

/* Stall worker w's connection for ms, or (ms < 0) only until it is told
 * SUSPENDED (2/3 of the session timeout at most), then cut it (only new
 * connections move) and let them through: back on the same session. */
static void stall(run_t *r, int w, int ms, int cut_after)
{
    CU_ASSERT_EQUAL(zkt_proxy_stall(r->px[w], 1), 0);
    if (ms >= 0)
        zkt_sleep_ms(ms);
    else
        zkt_wait_for(suspended, &w, r->session_ms);
    if (cut_after)
        zkt_proxy_cut(r->px[w]);
    CU_ASSERT_EQUAL(zkt_proxy_stall(r->px[w], 0), 0);
}

/* Delete the leader's node with a plain handle; the worker it was, or -1. */
static int delete_leader_node(run_t *r)
{
    for (int attempt = 0; attempt < 5; attempt++) {
        struct String_vector sv = {0, NULL};
        if (zoo_get_children(r->raw, r->path, 0, &sv) != ZOK) {
            zkt_sleep_ms(100);
            continue;
        }
        const char *first = NULL; /* the smallest sequence number leads */
        for (int i = 0; i < sv.count; i++) {
            size_t n = strlen(sv.data[i]);
            if (n >= 10 && (!first || strcmp(sv.data[i] + n - 10, first + strlen(first) - 10) < 0))
                first = sv.data[i];
        }
        char node[400] = "", data[32] = "";
        if (first)
            snprintf(node, sizeof node, "%s/%s", r->path, first);
        deallocate_String_vector(&sv);
        int len = (int)sizeof data - 1;
        if (!node[0] || zoo_get(r->raw, node, 0, data, &len, NULL) != ZOK || len < 2 || data[0] != 'w') {
            zkt_sleep_ms(100);
            continue;
        }
        data[len] = '\0';
        int victim = atoi(data + 1);
        int f = zkt_fault_begin("outside deletion", victim);
        int zrc = zoo_delete(r->raw, node, -1);
        zkt_fault_end(f);
        if (zrc == ZOK)
            return victim;
        zkt_sleep_ms(50); /* gone meanwhile (a selector's term ended): again */
    }
    CU_FAIL("could not delete the leader's node");
    return -1;
}

/* One fault aimed at worker w (-1: none can be aimed at; skipped if it
 * needs one); returns the worker it hit. */
static int inject(run_t *r, int type, int w)
{
    int f;
    int64_t sid;
    char pw[16];
    if (w < 0 && type != F_RESTART && type != F_DELETE && type != F_KILL_LEADER)
        return -1;
    switch (type) {
    case F_SHORT_STALL: /* shorter than the session timeout */
        f = zkt_fault_begin("short stall", w);
        stall(r, w, -1, 1);
        zkt_fault_end(f);
        return w;
    case F_LONG_STALL: /* longer than the session timeout */
        f = zkt_fault_begin("long stall", w);
        stall(r, w, r->session_ms * 2, 1);
        zkt_fault_end(f);
        return w;
    case F_CUT:
        f = zkt_fault_begin("cut", w);
        zkt_proxy_cut(r->px[w]);
        zkt_fault_end(f);
        return w;
    case F_RESTART:
        f = zkt_fault_begin("server restart", -1);
        CU_ASSERT_EQUAL(zkt_server("restart"), 0);
        zkt_fault_end(f);
        return -1;
    case F_DELETE:
        return delete_leader_node(r);
    case F_EXPIRE:
        if (!read_session(w, &sid, pw)) {
            CU_FAIL("no session to expire");
            return -1;
        }
        f = zkt_fault_begin("forced expiry", w);
        CU_ASSERT_EQUAL(zkt_expire_session_at(r->hosts, sid, pw), 0);
        zkt_fault_end(f);
        return w;
    case F_KILL_LEADER:
        f = zkt_fault_begin("ZooKeeper leader killed", w);
        CU_ASSERT_EQUAL(zkt_ensemble_bounce_leader(3000), 0);
        zkt_fault_end(f);
        return w;
    }
    return -1;
}

/* The standalone schedule, each aimed at the leader of the moment. */
static void standalone_faults(run_t *r)
{
    static const int order[] = {F_SHORT_STALL, F_LONG_STALL, F_CUT, F_RESTART, F_DELETE, F_EXPIRE};
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        if (i > 0)
            zkt_sleep_ms(order[i - 1] == F_RESTART ? 1500 : 1000);
        inject(r, order[i], wait_leader());
    }
}

/* The ensemble's: its leader killed twice (while one of ours leads), then
 * our leader's session expired. */
static void ensemble_faults(run_t *r)
{
    for (int round = 0; round < 2; round++) {
        inject(r, F_KILL_LEADER, wait_leader());
        zkt_sleep_ms(2000);
    }
    inject(r, F_EXPIRE, wait_leader());
}

/* Random faults on random workers (the leader half of the time), at
 * random pauses, then the leader's session expired.  At most one long
 * stall and one restart (they take long). */
static void mixed_faults(run_t *r)
{
    int longs = 0, restarts = 0;
    for (int i = 0; i < 6; i++) {
        zkt_sleep_ms(300 + (int)(rand_r(&r->seed) % 1200));
        int type = (int)(rand_r(&r->seed) % 6);
        if ((type == F_LONG_STALL && longs++) || (type == F_RESTART && restarts++))
            type = F_CUT;
        int w = rand_r(&r->seed) % 2 ? wait_leader() : (int)(rand_r(&r->seed) % WORKERS);
        inject(r, type, w);
    }
    zkt_sleep_ms(500);
    inject(r, F_EXPIRE, wait_leader());
}

/* ---- the workload --------------------------------------------------------------------------- */

static int all_ready(void *arg)
{
    (void)arg;
    for (int w = 0; w < WORKERS; w++)
        if (!atomic_load(&sh->w[w].ready))
            return 0;
    return 1;
}

/* (4) progress: a term began after `since` (every worker's, if all). */
typedef struct led_since {
    int64_t since;
    int all;
} led_since_t;

static int led_since(void *arg)
{
    led_since_t *l = arg;
    int n = 0;
    for (int w = 0; w < WORKERS; w++)
        n += atomic_load(&sh->w[w].last_lead_ms) > l->since;
    return l->all ? n == WORKERS : n > 0;
}

/* Every latch is in the election, each with a node of its worker's
 * current session (a latch rejoins after its node or session is gone). */
static int all_rejoined(void *arg)
{
    run_t *r = arg;
    struct String_vector sv = {0, NULL};
    if (zoo_get_children(r->raw, r->path, 0, &sv) != ZOK)
        return 0;
    int seen = 0;
    for (int i = 0; i < sv.count; i++) {
        char node[400];
        snprintf(node, sizeof node, "%s/%s", r->path, sv.data[i]);
        struct Stat st;
        if (zoo_exists(r->raw, node, 0, &st) != ZOK)
            continue;
        for (int w = 0; w < WORKERS; w++)
            if (st.ephemeralOwner == atomic_load(&sh->w[w].session))
                seen |= 1 << w;
    }
    int n = sv.count;
    deallocate_String_vector(&sv);
    return n == WORKERS && seen == (1 << WORKERS) - 1;
}

static void run_workload(int kind, const char *name, int on_ensemble)
{
    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CU_ASSERT_NOT_EQUAL_FATAL(sh, MAP_FAILED);
    memset(sh, 0, sizeof *sh);
    char path[128];
    zkt_path(name, path, sizeof path);
    run_t r = {.hosts = on_ensemble ? zkt_ensemble_hosts() : zkt_hosts(), .path = path,
               .session_ms = on_ensemble ? ENS_SESSION_MS : SESSION_MS};
    const char *seed_env = getenv("ZKR_SEED");
    r.seed = seed_env && *seed_env ? (unsigned)strtoul(seed_env, NULL, 10) : (unsigned)zkt_now_ms();
    for (int w = 0; w < WORKERS && !on_ensemble; w++) {
        r.px[w] = zkt_proxy_start(zkt_server_port());
        CU_ASSERT_PTR_NOT_NULL_FATAL(r.px[w]);
    }
    /* From the fork on, no fatal assertion: the workers and proxies must
     * be stopped on every path. */
    pid_t parent = getpid(), pids[WORKERS];
    for (int w = 0; w < WORKERS; w++) {
        pids[w] = fork();
        if (pids[w] == 0)
            worker(w, kind, on_ensemble ? r.hosts : zkt_proxy_hosts(r.px[w]), path, r.session_ms, parent);
        if (pids[w] < 0)
            fprintf(stderr, "fork: worker %d not started\n", w);
    }
    r.raw = zkt_plain_raw_at(r.hosts);
    CU_ASSERT_PTR_NOT_NULL(r.raw);
    /* Latches join one after the other (0 leads first: a session-policy
     * latch meets the stalls); the others all at once. */
    int joined = r.raw != NULL;
    for (int w = 0; w < WORKERS && joined; w++) {
        atomic_store(&sh->w[w].go, 1);
        if (kind == W_LATCH)
            joined = zkt_wait_children(r.raw, path, w + 1, WAIT_MS);
    }
    joined = joined && zkt_wait_for(all_ready, NULL, 20000);
    CU_ASSERT_TRUE(joined);
    int64_t last_fault = zkt_now_ms();
    if (joined && wait_leader() >= 0) {
        zkt_faults_reset();
        if (on_ensemble)
            ensemble_faults(&r);
        else if (kind == W_MIXED)
            mixed_faults(&r);
        else
            standalone_faults(&r);
        const zkt_fault_t *lastf = zkt_fault_get(zkt_fault_count() - 1);
        last_fault = lastf ? lastf->begin : zkt_now_ms();
    }
    /* (4) someone leads after the last fault (with terms that end by
     * themselves, everyone does); latches are all back in the election. */
    int bound = on_ensemble ? 40000 : 30000;
    led_since_t ls = {last_fault, kind != W_LATCH};
    int progress = zkt_wait_for(led_since, &ls, bound);
    if (!progress)
        fprintf(stderr, "%s led within %d ms of the last fault\n", ls.all ? "not every worker" : "nobody", bound);
    CU_ASSERT_TRUE(progress);
    int rejoined = kind != W_LATCH || (r.raw && zkt_wait_for(all_rejoined, &r, 20000));
    if (!rejoined)
        fprintf(stderr, "the latches are not all back in the election, on their sessions, within 20 s\n");
    CU_ASSERT_TRUE(rejoined);
    if (!progress || !rejoined) {
        if (r.raw)
            zkt_print_nodes(stderr, r.raw, path, "election", last_fault);
        print_workers();
        zkt_faults_print(stderr, last_fault);
    }

    atomic_store(&sh->stop, 1);
    int exited = 1;
    for (int w = 0; w < WORKERS; w++) {
        int st = pids[w] > 0 ? zkt_wait_child(pids[w], 30000) : -1;
        if (st != 0) {
            fprintf(stderr, "worker %d exited with %d\n", w, st);
            exited = 0;
        }
    }
    CU_ASSERT_TRUE(exited);
    int n = atomic_load(&sh->nterms);
    if (n > MAX_TERMS)
        n = MAX_TERMS;
    char seed[64] = "";
    if (kind == W_MIXED)
        snprintf(seed, sizeof seed, " (faults of seed %u: ZKR_SEED=%u repeats them)", r.seed, r.seed);
    printf("\n    %s: %d terms, %d unexpected errors%s\n", name, n, atomic_load(&sh->errors), seed);
    if (atomic_load(&sh->errors) > 0 || n <= 3) {
        print_workers();
        zkt_faults_print(stderr, 0);
    }
    CU_ASSERT_EQUAL(atomic_load(&sh->errors), 0);
    CU_ASSERT_TRUE(n > 3);
    check_terms(n, r.session_ms);

    /* (3) nothing left once every worker has closed */
    int empty = r.raw && zkt_wait_children(r.raw, path, 0, 10000);
    if (!empty && r.raw)
        zkt_print_nodes(stderr, r.raw, path, "left behind", last_fault);
    CU_ASSERT_TRUE(empty);
    zkt_raw_close(r.raw);
    for (int w = 0; w < WORKERS; w++)
        zkt_proxy_stop(r.px[w]);
    munmap(sh, sizeof *sh);
    sh = NULL;
}

static void test_latch(void)
{
    run_workload(W_LATCH, "lf-latch", 0);
}

static void test_selector(void)
{
    run_workload(W_SELECTOR, "lf-selector", 0);
}

static void test_mixed(void)
{
    run_workload(W_MIXED, "lf-mixed", 0);
}

static void test_ensemble_latch(void)
{
    run_workload(W_LATCH, "lf-ens-latch", 1);
}

static void test_ensemble_selector(void)
{
    run_workload(W_SELECTOR, "lf-ens-selector", 1);
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("elections under faults", NULL, NULL);
    CU_add_test(s, "latches (session and standard policy): 4 processes, stalls, cut, restart, deletion, expiry",
                test_latch);
    CU_add_test(s, "selectors with auto requeue: 4 processes, the same faults", test_selector);
    CU_add_test(s, "latches that leave and rejoin: 4 processes, random faults", test_mixed);
    CU_pSuite e = CU_add_suite("3-node ensemble", zkt_ensemble_up, zkt_ensemble_down);
    CU_add_test(e, "latches: 4 processes, leader killed twice, forced expiry", test_ensemble_latch);
    CU_add_test(e, "selectors: 4 processes, leader killed twice, forced expiry", test_ensemble_selector);
}

int main(void)
{
    /* the parent's plain handles: as quiet as the workers' clients */
    zoo_set_debug_level((ZooLogLevel)(getenv("ZKR_ZK_LOG") ? atoi(getenv("ZKR_ZK_LOG")) : 0));
    return zkt_main("leader faults", add_suites);
}

/* Leader election across languages: C participants (zkr_latch_t,
 * zkr_selector_t, a term taken with zkr_leader_acquire_async) and Apache
 * Curator 5.4 participants (LeaderLatch, LeaderSelector; Debian's jars,
 * tests/interop/LeaderPeer.java driven over a pipe) in ONE election.
 *
 * Every participant logs its terms: "start" when it is told it leads,
 * "end" when it is told it does not, or, first, when it decides to leave
 * (before close: from then on it no longer acts as leader).  Both sides
 * stamp with CLOCK_MONOTONIC (Java's System.nanoTime on Linux; checked
 * below).  The merged log must show at most one leader at any time: a
 * term may begin only after every other term ended, i.e. after the earlier
 * leader was told it was not leader or was in doubt.  Hand-over goes in
 * join order; participant lists are Curator's getParticipants(), item for
 * item; a Java observer (polling Curator's getLeader) and a C observer
 * (zkr_observer_t) see the same leaders.  A leader of either language cut
 * off (a proxy stalls its connection) past its session is told before the
 * other language's participant leads.
 *
 * Every wait is bounded; no test asserts a speed. */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/harness/zkproxy.h"
#include "tests/harness/zkr_test.h"
#include "tests/interop/jpeer.h"

#define SESSION_MS 10000
#define LEAD_MS 15000 /* bound on a hand-over */

static int suite_init(void)
{
    jpeer_java = jpeer_start("LeaderPeer");
    return jpeer_java ? 0 : 1;
}

static int suite_clean(void)
{
    jpeer_stop(jpeer_java);
    jpeer_java = NULL;
    return 0;
}

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- the log of terms -------------------------------------------------------------- */

enum { EV_START, EV_END, EV_DOUBT };

typedef struct event {
    int64_t ns;
    char name[32];
    int kind;
} event_t;

#define MAX_EVENTS 4096

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static event_t events[MAX_EVENTS];
static int nevents;

static void log_event_at(int64_t ns, const char *name, int kind)
{
    pthread_mutex_lock(&log_mu);
    if (nevents < MAX_EVENTS) {
        events[nevents].ns = ns;
        snprintf(events[nevents].name, sizeof events[nevents].name, "%s", name);
        events[nevents].kind = kind;
        nevents++;
    }
    pthread_mutex_unlock(&log_mu);
}

static void log_event(const char *name, int kind)
{
    log_event_at(mono_ns(), name, kind);
}

/* Add the Java side's events ("EVENTS n T:NAME:KIND ..."); 0 if malformed. */
static int fetch_java_events(void)
{
    char *r = jcmd("events");
    int n = -1, got = 0, ok = 1;
    char *save = NULL;
    char *w = strtok_r(r, " ", &save);
    if (!w || strcmp(w, "EVENTS") != 0 || !(w = strtok_r(NULL, " ", &save)) || sscanf(w, "%d", &n) != 1)
        ok = 0;
    while (ok && (w = strtok_r(NULL, " ", &save))) {
        long long ns;
        char name[32], kind[16];
        if (sscanf(w, "%lld:%31[^:]:%15s", &ns, name, kind) != 3) {
            ok = 0;
            break;
        }
        log_event_at(ns, name, strcmp(kind, "start") == 0 ? EV_START : strcmp(kind, "doubt") == 0 ? EV_DOUBT : EV_END);
        got++;
    }
    if (!ok || got != n)
        fprintf(stderr, "\n    bad events answer: %s\n", r);
    free(r);
    return ok && got == n;
}

static int cmp_event(const void *a, const void *b)
{
    const event_t *x = a, *y = b;
    return (x->ns > y->ns) - (x->ns < y->ns);
}

/* Merge and check the log: returns the overlaps (a term that began while
 * another participant had not been told its own ended); the leaders in
 * order of their terms go to order (space-separated). */
static int check_terms(char *order, size_t len)
{
    CU_ASSERT_TRUE(fetch_java_events());
    pthread_mutex_lock(&log_mu);
    qsort(events, (size_t)nevents, sizeof *events, cmp_event);
    char leading[64][32];
    int nlead = 0, overlaps = 0;
    order[0] = '\0';
    for (int i = 0; i < nevents; i++) {
        const event_t *e = &events[i];
        int at = -1;
        for (int k = 0; k < nlead; k++)
            if (strcmp(leading[k], e->name) == 0)
                at = k;
        if (e->kind == EV_START) {
            if (at >= 0)
                continue; /* told twice: one term */
            if (nlead > 0) {
                overlaps++;
                printf("\n    OVERLAP: %s began at %lld while %s led", e->name, (long long)e->ns, leading[0]);
            }
            if (nlead < 64)
                snprintf(leading[nlead++], sizeof leading[0], "%s", e->name);
            size_t used = strlen(order);
            snprintf(order + used, len - used, "%s%s", used ? " " : "", e->name);
        } else if (at >= 0) {
            memmove(leading[at], leading[at + 1], (size_t)(nlead - at - 1) * sizeof leading[0]);
            nlead--;
        }
    }
    nevents = 0;
    pthread_mutex_unlock(&log_mu);
    printf("\n    terms in order: %s", order);
    return overlaps;
}

/* ---- C participants ------------------------------------------------------------------- */

typedef struct cpart {
    char name[32];
    zkr_client_t *c;
    zkr_latch_t *latch;
    zkr_selector_t *sel;
    atomic_int leading;
    atomic_int resign; /* selector: end the term */
    atomic_int terms;
    _Atomic int64_t token;
} cpart_t;

static void on_latch(zkr_latch_t *latch, int is_leader, int64_t token, void *ctx)
{
    (void)latch;
    cpart_t *p = ctx;
    if (is_leader) {
        atomic_store(&p->token, token);
        if (!atomic_exchange(&p->leading, 1)) {
            atomic_fetch_add(&p->terms, 1);
            log_event(p->name, EV_START);
        }
    } else if (atomic_exchange(&p->leading, 0)) {
        log_event(p->name, EV_END);
    }
}

/* A selector's term: lead until told to stop or to resign. */
static void take_leadership(zkr_selector_t *s, int64_t token, void *ctx)
{
    cpart_t *p = ctx;
    atomic_store(&p->token, token);
    atomic_store(&p->leading, 1);
    atomic_fetch_add(&p->terms, 1);
    log_event(p->name, EV_START);
    while (!atomic_load(&p->resign) && zkr_selector_wait_stop(s, 20) == ZKR_ETIMEDOUT)
        ;
    atomic_store(&p->leading, 0);
    log_event(p->name, EV_END); /* before the mutex is released */
}

/* A C participant on a client of its own (through hosts: a proxy; NULL:
 * the test server). */
static cpart_t *cpart_join_at(const char *name, const char *path, zkr_election_kind_t kind, const char *hosts)
{
    cpart_t *p = calloc(1, sizeof *p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    snprintf(p->name, sizeof p->name, "%s", name);
    p->c = hosts ? zkt_client_at(hosts, SESSION_MS) : zkt_client(SESSION_MS);
    if (kind == ZKR_ELECTION_LATCH) {
        CU_ASSERT_EQUAL_FATAL(zkr_latch_new(&p->latch, p->c, path, name), ZKR_OK);
        CU_ASSERT_EQUAL_FATAL(zkr_latch_set_listener(p->latch, on_latch, p), ZKR_OK);
        CU_ASSERT_EQUAL_FATAL(zkr_latch_start(p->latch), ZKR_OK);
    } else {
        CU_ASSERT_EQUAL_FATAL(zkr_selector_new(&p->sel, p->c, path, name, take_leadership, p), ZKR_OK);
        CU_ASSERT_EQUAL_FATAL(zkr_selector_start(p->sel), ZKR_OK);
    }
    return p;
}

static cpart_t *cpart_join(const char *name, const char *path, zkr_election_kind_t kind)
{
    return cpart_join_at(name, path, kind, NULL);
}

static int cpart_leads_now(void *arg)
{
    return atomic_load(&((cpart_t *)arg)->leading);
}

/* Leave: the term (if any) ends in the log first, then close. */
static void cpart_leave(cpart_t *p)
{
    if (p->latch) {
        if (atomic_exchange(&p->leading, 0))
            log_event(p->name, EV_END);
        CU_ASSERT_EQUAL(zkr_latch_close(p->latch, ZKR_LATCH_CLOSE_NOTIFY_LEADER), ZKR_OK);
        zkr_latch_free(p->latch);
    } else {
        atomic_store(&p->resign, 1);
        CU_ASSERT_EQUAL(zkr_selector_close(p->sel), ZKR_OK);
        zkr_selector_free(p->sel);
    }
    zkr_client_close(p->c);
    free(p);
}

/* ---- observers ------------------------------------------------------------------------ */

typedef struct cobs {
    pthread_mutex_t mu;
    char seen[4096]; /* leader ids, "-" for none, space-separated */
    char last[64];
    int64_t tokens[256];
    int ntokens;
} cobs_t;

static void on_observe(zkr_observer_t *observer, const zkr_participant_t *leader, void *ctx)
{
    (void)observer;
    cobs_t *o = ctx;
    pthread_mutex_lock(&o->mu);
    const char *now = leader ? leader->id : "-";
    if (strcmp(now, o->last) != 0) {
        size_t used = strlen(o->seen);
        snprintf(o->seen + used, sizeof o->seen - used, "%s%s", used ? " " : "", now);
        snprintf(o->last, sizeof o->last, "%s", now);
        if (leader && o->ntokens < 256)
            o->tokens[o->ntokens++] = leader->token;
    }
    pthread_mutex_unlock(&o->mu);
}

/* The leaders a sequence names, without "none" and repeats: what two
 * observers must agree on (an observer may or may not see the instant
 * between two terms when nobody leads). */
static void leaders_only(const char *seen, char *out, size_t len)
{
    char copy[4096], last[64] = "";
    snprintf(copy, sizeof copy, "%s", seen);
    out[0] = '\0';
    char *save = NULL;
    for (char *w = strtok_r(copy, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
        if (strcmp(w, "-") == 0 || strcmp(w, last) == 0)
            continue;
        size_t used = strlen(out);
        snprintf(out + used, len - used, "%s%s", used ? " " : "", w);
        snprintf(last, sizeof last, "%s", w);
    }
}

/* Our participants as "id* id id" (Curator's form), or "-". */
static char *c_participants(zkr_client_t *c, const char *path, zkr_election_kind_t kind, const char *marker)
{
    zkr_participant_t *ps = NULL;
    size_t n = 0;
    int rc = zkr_election_participants(c, path, kind, &ps, &n);
    CU_ASSERT_EQUAL(rc, ZKR_OK);
    if (rc != ZKR_OK)
        return strdup("ERROR");
    char **v = calloc(n + 1, sizeof *v);
    for (size_t i = 0; i < n; i++) {
        if (asprintf(&v[i], "%s%s", ps[i].id, ps[i].is_leader ? "*" : "") < 0)
            v[i] = NULL;
        const char *base = strrchr(ps[i].node_path, '/');
        CU_ASSERT_TRUE(base && jpeer_curator_name(base + 1, marker));
        CU_ASSERT_EQUAL(ps[i].is_leader, i == 0);
    }
    char *s = jpeer_joined(v, n);
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
    zkr_participants_free(ps, n);
    return s;
}

static void assert_same_participants(zkr_client_t *c, const char *path, zkr_election_kind_t kind)
{
    const char *k = kind == ZKR_ELECTION_LATCH ? "latch" : "selector";
    char *ours = c_participants(c, path, kind, kind == ZKR_ELECTION_LATCH ? "latch-" : "lock-");
    char *theirs = jcmd("participants %s %s", k, path);
    printf("\n    participants: ours '%s', Curator's '%s'", ours, theirs);
    CU_ASSERT_STRING_EQUAL(ours, theirs);
    /* the leader alone, both ways */
    zkr_participant_t *l = NULL;
    int rc = zkr_election_leader(c, path, kind, &l);
    char *jl = jcmd("leader %s %s", k, path);
    if (rc == ZKR_ENONODE) {
        CU_ASSERT_STRING_EQUAL(jl, "-");
    } else {
        CU_ASSERT_EQUAL(rc, ZKR_OK);
        CU_ASSERT_TRUE(rc == ZKR_OK && strcmp(l->id, jl) == 0 && l->is_leader);
        zkr_participants_free(l, 1);
    }
    free(jl);
    free(ours);
    free(theirs);
}

/* Wait until path has n children. */
static void wait_members(const char *path, int n)
{
    zhandle_t *raw = zkt_raw();
    CU_ASSERT_TRUE(zkt_wait_children(raw, path, n, LEAD_MS));
    zkt_raw_close(raw);
}

/* ---- 0. the clocks ------------------------------------------------------------------------ */

static void test_same_clock(void)
{
    /* Java's System.nanoTime() lies between two of our CLOCK_MONOTONIC
     * readings: the log's stamps of both sides are comparable. */
    for (int i = 0; i < 5; i++) {
        int64_t before = mono_ns();
        char *r = jcmd("now");
        int64_t after = mono_ns();
        long long t = atoll(r);
        CU_ASSERT_TRUE(t >= before && t <= after);
        if (t < before || t > after)
            printf("\n    Java %lld not within [%lld, %lld]", t, (long long)before, (long long)after);
        free(r);
    }
}

/* ---- members of either language ---------------------------------------------------------- */

typedef struct member {
    char name[32];
    cpart_t *c; /* NULL: a Java participant */
} member_t;

static const char *kind_name(zkr_election_kind_t kind)
{
    return kind == ZKR_ELECTION_LATCH ? "latch" : "selector";
}

/* lang 'j' (Java) or 'c' joins as name, its id the same. */
static void member_join(member_t *m, char lang, const char *name, const char *path, zkr_election_kind_t kind)
{
    snprintf(m->name, sizeof m->name, "%s", name);
    m->c = NULL;
    if (lang == 'j')
        CU_ASSERT_TRUE(jis("STARTED", "%s %s %s %s", kind_name(kind), name, path, name));
    if (lang != 'j')
        m->c = cpart_join(name, path, kind);
}

/* Wait until m leads, at most ms; 1 if it does. */
static int member_await_ms(member_t *m, int ms)
{
    if (!m->c)
        return jis("LEADER", "await %s %d", m->name, ms);
    return zkt_wait_for(cpart_leads_now, m->c, ms);
}

static int member_await(member_t *m)
{
    return member_await_ms(m, LEAD_MS);
}

static int member_leads(member_t *m)
{
    if (!m->c) {
        char *r = jcmd("leads %s", m->name);
        int yes = strcmp(r, "YES") == 0;
        free(r);
        return yes;
    }
    return atomic_load(&m->c->leading);
}

static void member_leave(member_t *m)
{
    if (!m->c)
        CU_ASSERT_TRUE(jis("CLOSED", "close %s", m->name));
    if (m->c)
        cpart_leave(m->c);
    m->c = NULL;
}

/* ---- 1. one election, both languages ------------------------------------------------------------ */

/* Who joins, in order ('j': a Java participant, 'c': a C one), then every
 * leader leaves in turn. */
static void mixed_election(zkr_election_kind_t kind, const char *lineup)
{
    const char *k = kind_name(kind);
    char p[128];
    zkt_path(kind == ZKR_ELECTION_LATCH ? "leader-latch" : "leader-selector", p, sizeof p);
    zkr_client_t *oc = zkt_client(SESSION_MS);
    cobs_t obs;
    memset(&obs, 0, sizeof obs);
    pthread_mutex_init(&obs.mu, NULL);
    zkr_observer_t *observer = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_observer_new(&observer, oc, p, kind, on_observe, &obs), ZKR_OK);
    CU_ASSERT_TRUE(jis("STARTED", "observe o%s %s %s", k, k, p));

    int n = (int)strlen(lineup);
    member_t ms[16];
    char want[512] = "";
    for (int i = 0; i < n && i < 16; i++) {
        char name[32];
        snprintf(name, sizeof name, "%c%d-%s", lineup[i], i, k);
        member_join(&ms[i], lineup[i], name, p, kind);
        wait_members(p, i + 1); /* joined in this order */
        snprintf(want + strlen(want), sizeof want - strlen(want), "%s%s", i ? " " : "", name);
    }
    /* the first leads, nobody else */
    CU_ASSERT_TRUE(member_await(&ms[0]));
    zkt_sleep_ms(200);
    for (int i = 1; i < n; i++)
        CU_ASSERT_FALSE(member_leads(&ms[i]));
    assert_same_participants(oc, p, kind);

    /* each leader leaves; the next in join order takes over */
    for (int i = 0; i < n; i++) {
        CU_ASSERT_TRUE(member_await(&ms[i]));
        if (i == 1)
            assert_same_participants(oc, p, kind); /* another language leads now */
        member_leave(&ms[i]);
        zkt_sleep_ms(100); /* the poller sees every leader */
    }
    wait_members(p, 0);
    assert_same_participants(oc, p, kind);

    char order[1024];
    CU_ASSERT_EQUAL(check_terms(order, sizeof order), 0);
    CU_ASSERT_STRING_EQUAL(order, want); /* hand-over in join order, across languages */

    /* both observers saw every leader, in the same order */
    zkt_sleep_ms(200);
    char *jseen = jcmd("observed o%s", k);
    char jl[1024], cl[1024];
    leaders_only(jseen, jl, sizeof jl);
    pthread_mutex_lock(&obs.mu);
    leaders_only(obs.seen, cl, sizeof cl);
    int64_t tokens[256];
    int nt = obs.ntokens;
    memcpy(tokens, obs.tokens, sizeof tokens);
    pthread_mutex_unlock(&obs.mu);
    printf("\n    Java observer: %s\n    C observer:    %s", jl, cl);
    CU_ASSERT_STRING_EQUAL(jl, cl);
    CU_ASSERT_STRING_EQUAL(cl, want);
    for (int i = 1; i < nt; i++)
        CU_ASSERT_TRUE(tokens[i] > tokens[i - 1]); /* fencing tokens increase */
    free(jseen);
    zkr_observer_free(observer);
    pthread_mutex_destroy(&obs.mu);
    zkr_client_close(oc);
}

static void test_latch_mixed(void)
{
    mixed_election(ZKR_ELECTION_LATCH, "jcjcc");
}

static void test_selector_mixed(void)
{
    mixed_election(ZKR_ELECTION_SELECTOR, "cjjcj");
}

/* ---- 2. churn: leaders leave, newcomers join at the back ---------------------------------- */

static void churn(zkr_election_kind_t kind, int rounds)
{
    char p[128];
    zkt_path(kind == ZKR_ELECTION_LATCH ? "leader-churn-latch" : "leader-churn-sel", p, sizeof p);
    /* a ring of 4: j, c, j, c; each round the leader (the oldest still
     * in) leaves and one of its language joins at the back */
    enum { RING = 4, MAX = RING + 64 };
    member_t ms[MAX];
    char want[4096] = "", name[32];
    int total = 0;
    for (; total < RING; total++) {
        snprintf(name, sizeof name, "%c%d", total % 2 ? 'c' : 'j', total);
        member_join(&ms[total], name[0], name, p, kind);
        wait_members(p, total + 1);
    }
    for (int i = 0; i < total; i++) {
        snprintf(want + strlen(want), sizeof want - strlen(want), "%s%s", i ? " " : "", ms[i].name);
        CU_ASSERT_TRUE(member_await(&ms[i]));
        char lang = ms[i].name[0];
        member_leave(&ms[i]);
        if (i < rounds && total < MAX) {
            snprintf(name, sizeof name, "%c%d", lang, total);
            member_join(&ms[total], lang, name, p, kind);
            total++;
            wait_members(p, RING);
        }
    }
    wait_members(p, 0);
    char order[4096];
    CU_ASSERT_EQUAL(check_terms(order, sizeof order), 0);
    CU_ASSERT_STRING_EQUAL(order, want);
    printf("\n    %d terms, %d of them by newcomers", total, total - RING);
}

static void test_latch_churn(void)
{
    churn(ZKR_ELECTION_LATCH, 12);
}

static void test_selector_churn(void)
{
    churn(ZKR_ELECTION_SELECTOR, 12);
}

/* ---- 3. a leader cut off past its session, either language --------------------------------- */

/* The leader (lang 'c' or 'j') reaches the server through a proxy, the
 * other language's participant directly.  The proxy stalls for good: the
 * leader must be told it is not leader (or in doubt) before the other
 * leads, which it does once the server expires the stalled session.  The
 * stall ends: the old leader rejoins behind and leads again only after the
 * other leaves. */
static void stalled_leader(zkr_election_kind_t kind, char lang)
{
    const char *k = kind_name(kind);
    char p[128], first[32], second[32];
    zkt_path(lang == 'c' ? "leader-stall-c" : "leader-stall-j", p, sizeof p);
    snprintf(first, sizeof first, "%c-stalled-%s", lang, k);
    snprintf(second, sizeof second, "%c-next-%s", lang == 'c' ? 'j' : 'c', k);
    zkt_proxy_t *px = zkt_proxy_start(zkt_server_port());
    CU_ASSERT_PTR_NOT_NULL_FATAL(px);
    member_t a, b;
    snprintf(a.name, sizeof a.name, "%s", first);
    a.c = NULL;
    if (lang == 'c')
        a.c = cpart_join_at(first, p, kind, zkt_proxy_hosts(px));
    else
        CU_ASSERT_TRUE(jis("STARTED", "%s %s %s %s %s", k, first, p, first, zkt_proxy_hosts(px)));
    CU_ASSERT_TRUE(member_await(&a));
    member_join(&b, lang == 'c' ? 'j' : 'c', second, p, kind);
    wait_members(p, 2);
    CU_ASSERT_FALSE(member_leads(&b));

    int64_t t0 = zkt_now_ms();
    CU_ASSERT_EQUAL(zkt_proxy_stall(px, 1), 0);
    CU_ASSERT_TRUE(member_await_ms(&b, 3 * SESSION_MS)); /* once the session expired */
    printf("\n    %s stalled: %s leads after %lld ms", first, second, (long long)(zkt_now_ms() - t0));
    CU_ASSERT_FALSE(member_leads(&a));
    CU_ASSERT_EQUAL(zkt_proxy_stall(px, 0), 0);
    /* the stalled one comes back on a new session, behind */
    zkt_sleep_ms(SESSION_MS / 2);
    CU_ASSERT_FALSE(member_leads(&a));
    CU_ASSERT_TRUE(member_leads(&b));
    member_leave(&b);
    if (kind == ZKR_ELECTION_LATCH) { /* a latch rejoins by itself; a selector without requeue does not */
        CU_ASSERT_TRUE(member_await(&a));
    }
    member_leave(&a);
    wait_members(p, 0);
    char order[256], want[128];
    CU_ASSERT_EQUAL(check_terms(order, sizeof order), 0); /* never two at once */
    if (kind == ZKR_ELECTION_LATCH)
        snprintf(want, sizeof want, "%s %s %s", first, second, first);
    else
        snprintf(want, sizeof want, "%s %s", first, second);
    CU_ASSERT_STRING_EQUAL(order, want);
    zkt_proxy_stop(px);
}

static void test_latch_c_stalled(void)
{
    stalled_leader(ZKR_ELECTION_LATCH, 'c');
}

static void test_latch_java_stalled(void)
{
    stalled_leader(ZKR_ELECTION_LATCH, 'j');
}

static void test_selector_c_stalled(void)
{
    stalled_leader(ZKR_ELECTION_SELECTOR, 'c');
}

static void test_selector_java_stalled(void)
{
    stalled_leader(ZKR_ELECTION_SELECTOR, 'j');
}

/* ---- 4. a proclaimed value is Curator's id; an asynchronous term is a latch participant ---- */

typedef struct aterm {
    atomic_int done;
    int rc;
    zkr_hold_t *hold;
} aterm_t;

static void on_term(uint64_t acquire_id, int rc, zkr_hold_t *hold, void *ctx)
{
    (void)acquire_id;
    aterm_t *a = ctx;
    a->rc = rc;
    a->hold = hold;
    if (rc == ZKR_OK)
        log_event("a-third", EV_START);
    atomic_store(&a->done, 1);
}

static int aterm_done(void *arg)
{
    return atomic_load(&((aterm_t *)arg)->done);
}

/* Java leads first; a C latch and an asynchronous C term queue behind.
 * Each C leader proclaims a value while a C participant follows it:
 * Curator's LeaderLatch (5.x) reacts only to its predecessor's deletion,
 * and a data change would use up its one-shot watch (see zkr_latch(3)). */
static void test_proclaim_and_async_term(void)
{
    char p[128];
    zkt_path("leader-proclaim", p, sizeof p);
    CU_ASSERT_TRUE(jis("STARTED", "latch j-first %s j-first", p));
    CU_ASSERT_TRUE(jis("LEADER", "await j-first %d", LEAD_MS));
    member_t c;
    member_join(&c, 'c', "c-second", p, ZKR_ELECTION_LATCH);
    wait_members(p, 2);
    /* an asynchronous term queues behind both, as a latch participant */
    zkr_client_t *ac = zkt_client(SESSION_MS);
    CU_ASSERT_EQUAL(zkr_client_set_dispatch(ac, ZKR_DISPATCH_THREAD), ZKR_OK);
    aterm_t a;
    memset(&a, 0, sizeof a);
    uint64_t aid = 0;
    CU_ASSERT_EQUAL_FATAL(zkr_leader_acquire_async(ac, p, "a-third", -1, on_term, &a, &aid), ZKR_OK);
    wait_members(p, 3);
    CU_ASSERT_TRUE(jis("j-first* c-second a-third", "participants latch %s", p));
    CU_ASSERT_TRUE(jis("CLOSED", "close j-first"));
    CU_ASSERT_TRUE(member_await(&c));
    /* a C leader proclaims: Curator reads the new value as its id */
    CU_ASSERT_EQUAL(zkr_latch_proclaim(c.c->latch, "c-second@10.0.0.7:8080"), ZKR_OK);
    CU_ASSERT_TRUE(jis("c-second@10.0.0.7:8080", "leader latch %s", p));
    CU_ASSERT_TRUE(jis("c-second@10.0.0.7:8080* a-third", "participants latch %s", p));
    CU_ASSERT_EQUAL(atomic_load(&a.done), 0);
    member_leave(&c);
    CU_ASSERT_TRUE(zkt_wait_for(aterm_done, &a, LEAD_MS));
    CU_ASSERT_EQUAL_FATAL(a.rc, ZKR_OK);
    CU_ASSERT_STRING_EQUAL(zkr_hold_kind(a.hold), "leader");
    CU_ASSERT_TRUE(jis("a-third", "leader latch %s", p));
    /* proclaimed through the hold, seen by Curator */
    CU_ASSERT_EQUAL(zkr_hold_proclaim(a.hold, "a-third-v2"), ZKR_OK);
    CU_ASSERT_TRUE(jis("a-third-v2", "leader latch %s", p));
    log_event("a-third", EV_END);
    CU_ASSERT_EQUAL(zkr_hold_release(a.hold), ZKR_OK);
    wait_members(p, 0);
    CU_ASSERT_TRUE(jis("-", "leader latch %s", p));
    char order[256];
    CU_ASSERT_EQUAL(check_terms(order, sizeof order), 0);
    CU_ASSERT_STRING_EQUAL(order, "j-first c-second a-third");
    zkr_client_close(ac);
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("leader interop", suite_init, suite_clean);
    CU_add_test(s, "C and Java stamp terms on one clock", test_same_clock);
    CU_add_test(s, "latch: C and Curator in one election: one leader, join order, same lists and observers",
                test_latch_mixed);
    CU_add_test(s, "selector: C and Curator in one election: one leader, join order, same lists and observers",
                test_selector_mixed);
    CU_add_test(s, "latch: 12 hand-overs, newcomers of both languages at the back", test_latch_churn);
    CU_add_test(s, "selector: 12 hand-overs, newcomers of both languages at the back", test_selector_churn);
    CU_add_test(s, "latch: a C leader cut off past its session is told before Curator's participant leads",
                test_latch_c_stalled);
    CU_add_test(s, "latch: a Curator leader cut off past its session is told before the C participant leads",
                test_latch_java_stalled);
    CU_add_test(s, "selector: a C leader cut off past its session is told before Curator's participant leads",
                test_selector_c_stalled);
    CU_add_test(s, "selector: a Curator leader cut off past its session is told before the C participant leads",
                test_selector_java_stalled);
    CU_add_test(s, "latch: a proclaimed value is Curator's id; an asynchronous term queues as a participant",
                test_proclaim_and_async_term);
}

int main(void)
{
    return zkt_main("leader interop", add_suites);
}

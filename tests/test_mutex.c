/* zkr_mutex against a real server: exclusion under threads and processes,
 * reentrancy, timeouts, herd effect, FIFO, killed holder, fencing tokens,
 * participants, revocation, bad arguments. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/harness/zkr_test.h"

#define SESSION_MS 4000

typedef struct count_arg {
    zhandle_t *zh;
    const char *path;
    int want;
} count_arg_t;

static int count_is(void *p)
{
    count_arg_t *a = p;
    return zkt_count_children(a->zh, a->path) == a->want;
}

static int wait_children(zhandle_t *zh, const char *path, int want, int ms)
{
    count_arg_t a = {zh, path, want};
    return zkt_wait_for(count_is, &a, ms);
}

/* ---- mutual exclusion: threads and processes ----------------------------------- */

typedef struct detector {
    atomic_int inside;
    atomic_int overlaps;
    atomic_int total;
    atomic_int errors;
} detector_t;

typedef struct hammer {
    zkr_mutex_t *m;  /* shared object, or NULL to make one on c */
    zkr_client_t *c;
    const char *path;
    int cycles;
    detector_t *d;
} hammer_t;

static void hammer_run(hammer_t *h)
{
    zkr_mutex_t *m = h->m;
    if (!m && zkr_mutex_new(&m, h->c, h->path) != ZKR_OK) {
        atomic_fetch_add(&h->d->errors, 1);
        return;
    }
    for (int i = 0; i < h->cycles; i++) {
        if (zkr_mutex_acquire(m, 30000) != ZKR_OK) {
            atomic_fetch_add(&h->d->errors, 1);
            continue;
        }
        if (atomic_fetch_add(&h->d->inside, 1) != 0)
            atomic_fetch_add(&h->d->overlaps, 1);
        atomic_fetch_add(&h->d->total, 1);
        atomic_fetch_sub(&h->d->inside, 1);
        if (zkr_mutex_release(m) != ZKR_OK)
            atomic_fetch_add(&h->d->errors, 1);
    }
    if (!h->m)
        zkr_mutex_free(m);
}

static void *hammer_thread(void *p)
{
    hammer_run(p);
    return NULL;
}

static void test_mutual_exclusion(void)
{
    enum { OWN = 6, SHARED = 3, PROCS = 2, CYCLES = 200 };
    char p[128];
    zkt_path("exclusion", p, sizeof p);
    /* The detector lives in shared memory so forked processes use it too. */
    detector_t *d = mmap(NULL, sizeof *d, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CU_ASSERT_NOT_EQUAL_FATAL(d, MAP_FAILED);
    memset(d, 0, sizeof *d);

    pid_t pids[PROCS];
    for (int i = 0; i < PROCS; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            zkr_client_options_t o;
            zkr_client_options_init(&o);
            o.zk_log_level = 0;
            zkr_client_t *c = NULL;
            if (zkr_client_open(&c, zkt_hosts(), &o) != ZKR_OK)
                _exit(2);
            hammer_t h = {NULL, c, p, CYCLES, d};
            hammer_run(&h);
            zkr_client_close(c);
            _exit(0);
        }
    }
    zkr_client_t *clients[OWN + 1];
    hammer_t hs[OWN + SHARED];
    pthread_t ts[OWN + SHARED];
    for (int i = 0; i <= OWN; i++)
        clients[i] = zkt_client(SESSION_MS);
    zkr_mutex_t *shared;
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&shared, clients[OWN], p), ZKR_OK);
    for (int i = 0; i < OWN + SHARED; i++) {
        hs[i] = (hammer_t){i < OWN ? NULL : shared, clients[i < OWN ? i : OWN], p, CYCLES, d};
        pthread_create(&ts[i], NULL, hammer_thread, &hs[i]);
    }
    for (int i = 0; i < OWN + SHARED; i++)
        pthread_join(ts[i], NULL);
    for (int i = 0; i < PROCS; i++) {
        int st = 0;
        waitpid(pids[i], &st, 0);
        CU_ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    CU_ASSERT_EQUAL(atomic_load(&d->overlaps), 0);
    CU_ASSERT_EQUAL(atomic_load(&d->errors), 0);
    CU_ASSERT_EQUAL(atomic_load(&d->total), (OWN + SHARED + PROCS) * CYCLES);
    printf("\n    %d cycles, %d overlaps\n", atomic_load(&d->total), atomic_load(&d->overlaps));
    zkr_mutex_free(shared);
    for (int i = 0; i <= OWN; i++)
        zkr_client_close(clients[i]);
    zhandle_t *raw = zkt_raw();
    CU_ASSERT_EQUAL(zkt_count_children(raw, p), 0);
    zkt_raw_close(raw);
    munmap(d, sizeof *d);
}

/* ---- reentrancy, ownership, timeouts --------------------------------------------- */

typedef struct try_arg {
    zkr_mutex_t *m;
    int64_t timeout;
    int rc;
    int release_rc;
} try_arg_t;

/* Another thread tries (and releases if it got it). */
static void *try_thread(void *p)
{
    try_arg_t *a = p;
    a->rc = zkr_mutex_acquire(a->m, a->timeout);
    a->release_rc = zkr_mutex_release(a->m);
    return NULL;
}

static void test_reentrancy(void)
{
    zkr_client_t *a = zkt_client(SESSION_MS), *b = zkt_client(SESSION_MS);
    char p[128];
    zkt_path("reentrant", p, sizeof p);
    zkr_mutex_t *ma, *mb;
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&ma, a, p), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&mb, b, p), ZKR_OK);
    for (int i = 0; i < 3; i++)
        CU_ASSERT_EQUAL(zkr_mutex_acquire(ma, 5000), ZKR_OK);
    zhandle_t *raw = zkt_raw();
    CU_ASSERT_EQUAL(zkt_count_children(raw, p), 1); /* one node for three holds */
    CU_ASSERT_EQUAL(zkr_mutex_acquire(mb, 0), ZKR_ETIMEDOUT);
    CU_ASSERT_EQUAL(zkr_mutex_acquire(mb, 200), ZKR_ETIMEDOUT);

    /* Another thread of this process does not hold it: its release is
     * refused and changes nothing. */
    try_arg_t t = {ma, 0, -99, -99};
    pthread_t th;
    pthread_create(&th, NULL, try_thread, &t);
    pthread_join(th, NULL);
    CU_ASSERT_EQUAL(t.rc, ZKR_ETIMEDOUT);
    CU_ASSERT_EQUAL(t.release_rc, ZKR_ENOTOWNER);
    CU_ASSERT_TRUE(zkr_mutex_is_held(ma));

    CU_ASSERT_EQUAL(zkr_mutex_release(ma), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_mutex_release(ma), ZKR_OK);
    CU_ASSERT_TRUE(zkr_mutex_is_held(ma));
    CU_ASSERT_EQUAL(zkr_mutex_acquire(mb, 200), ZKR_ETIMEDOUT);
    CU_ASSERT_EQUAL(zkr_mutex_release(ma), ZKR_OK);
    CU_ASSERT_FALSE(zkr_mutex_is_held(ma));
    CU_ASSERT_EQUAL(zkr_mutex_release(ma), ZKR_ENOTOWNER);
    CU_ASSERT_EQUAL(zkr_mutex_acquire(mb, 5000), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_mutex_release(mb), ZKR_OK);
    CU_ASSERT_TRUE(wait_children(raw, p, 0, 5000));
    zkt_raw_close(raw);
    zkr_mutex_free(ma);
    zkr_mutex_free(mb);
    zkr_client_close(a);
    zkr_client_close(b);
}

static void test_timeouts_leave_nothing(void)
{
    zkr_client_t *a = zkt_client(SESSION_MS), *b = zkt_client(SESSION_MS);
    char p[128];
    zkt_path("timeouts", p, sizeof p);
    zkr_mutex_t *ma, *mb;
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&ma, a, p), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&mb, b, p), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_acquire(ma, 5000), ZKR_OK);
    zhandle_t *raw = zkt_raw();
    for (int i = 0; i < 10; i++) {
        int64_t t0 = zkt_now_ms();
        CU_ASSERT_EQUAL(zkr_mutex_acquire(mb, i % 2 ? 200 : 0), ZKR_ETIMEDOUT);
        if (i % 2)
            CU_ASSERT_TRUE(zkt_now_ms() - t0 >= 190);
        CU_ASSERT_EQUAL(zkt_count_children(raw, p), 1); /* only the holder's */
    }
    CU_ASSERT_FALSE(zkr_mutex_is_held(mb));
    CU_ASSERT_EQUAL(zkr_mutex_release(ma), ZKR_OK);
    zkt_raw_close(raw);
    zkr_mutex_free(ma);
    zkr_mutex_free(mb);
    zkr_client_close(a);
    zkr_client_close(b);
}

/* ---- waiters: herd, FIFO, hand-off -------------------------------------------------- */

#define WAITERS 20

typedef struct waiter {
    zkr_client_t *c;
    zkr_mutex_t *m;
    int id;
    atomic_int *order;     /* acquisition counter */
    atomic_int acquired_as; /* position in which it acquired (1-based) */
    atomic_int go;          /* released when set */
    int rc;
} waiter_t;

static void *waiter_thread(void *p)
{
    waiter_t *w = p;
    w->rc = zkr_mutex_acquire(w->m, 60000);
    if (w->rc != ZKR_OK)
        return NULL;
    atomic_store(&w->acquired_as, atomic_fetch_add(w->order, 1) + 1);
    for (int i = 0; i < 3000 && !atomic_load(&w->go); i++)
        zkt_sleep_ms(10);
    zkr_mutex_release(w->m);
    return NULL;
}

static int held_count(waiter_t *ws, int n)
{
    int k = 0;
    for (int i = 0; i < n; i++)
        if (atomic_load(&ws[i].acquired_as) && !atomic_load(&ws[i].go))
            k++;
    return k;
}

typedef struct held_want {
    waiter_t *ws;
    int n;
    int want;
} held_want_t;

static int held_is(void *p)
{
    held_want_t *h = p;
    return held_count(h->ws, h->n) == h->want;
}

/* Watches registered by the server on `path` (wchp): one line per session. */
static int watch_sessions(const char *path)
{
    return zkt_watch_count_on_exact(path);
}

static void test_herd_and_fifo(void)
{
    char p[128];
    zkt_path("herd", p, sizeof p);
    zkr_client_t *holder_c = zkt_client(SESSION_MS);
    zkr_mutex_t *hm;
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&hm, holder_c, p), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_acquire(hm, 5000), ZKR_OK);
    zhandle_t *raw = zkt_raw();

    atomic_int order = 0;
    waiter_t ws[WAITERS];
    pthread_t ts[WAITERS];
    memset(ws, 0, sizeof ws);
    /* Queue one by one, each with its own session, in a known order. */
    for (int i = 0; i < WAITERS; i++) {
        ws[i].c = zkt_client(SESSION_MS);
        ws[i].id = i;
        ws[i].order = &order;
        CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&ws[i].m, ws[i].c, p), ZKR_OK);
        pthread_create(&ts[i], NULL, waiter_thread, &ws[i]);
        CU_ASSERT_TRUE(wait_children(raw, p, i + 2, 10000));
    }
    zkt_sleep_ms(300); /* let the last waiter set its watch */

    /* Exactly one data watch per waiter, on its predecessor; none on the
     * lock directory (no children watch: no herd). */
    char **parts = NULL;
    size_t np = 0;
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_participants(hm, &parts, &np), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(np, WAITERS + 1);
    for (size_t i = 0; i + 1 < np; i++)
        CU_ASSERT_EQUAL(watch_sessions(parts[i]), 1);
    CU_ASSERT_EQUAL(watch_sessions(parts[np - 1]), 0);
    CU_ASSERT_EQUAL(watch_sessions(p), 0);
    char *wchc = zkt_4lw("wchc");
    int total_watch_lines = 0;
    for (char *s = wchc; s && *s; s++)
        if (*s == '/' && (s == wchc || s[-1] == '\t' || s[-1] == '\n'))
            total_watch_lines++;
    CU_ASSERT_EQUAL(total_watch_lines, WAITERS);
    free(wchc);

    /* Each release makes exactly one waiter acquire, in queue order. */
    CU_ASSERT_EQUAL(zkr_mutex_release(hm), ZKR_OK);
    for (int k = 0; k < WAITERS; k++) {
        held_want_t hw = {ws, WAITERS, 1};
        CU_ASSERT_TRUE(zkt_wait_for(held_is, &hw, 10000));
        zkt_sleep_ms(50); /* nobody else may get in meanwhile */
        CU_ASSERT_EQUAL(held_count(ws, WAITERS), 1);
        CU_ASSERT_EQUAL(atomic_load(&ws[k].acquired_as), k + 1); /* FIFO */
        atomic_store(&ws[k].go, 1);
    }
    for (int i = 0; i < WAITERS; i++) {
        pthread_join(ts[i], NULL);
        CU_ASSERT_EQUAL(ws[i].rc, ZKR_OK);
        zkr_mutex_free(ws[i].m);
        zkr_client_close(ws[i].c);
    }
    CU_ASSERT_TRUE(wait_children(raw, p, 0, 5000));
    zkr_strings_free(parts, np);
    zkt_raw_close(raw);
    zkr_mutex_free(hm);
    zkr_client_close(holder_c);
}

/* Two threads on ONE mutex object each queue with their own node. */
static void test_threads_share_object(void)
{
    zkr_client_t *c = zkt_client(SESSION_MS);
    char p[128];
    zkt_path("shared-object", p, sizeof p);
    zkr_mutex_t *m;
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&m, c, p), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_acquire(m, 5000), ZKR_OK);
    atomic_int order = 0;
    waiter_t w;
    memset(&w, 0, sizeof w);
    w.c = c;
    w.m = m;
    w.order = &order;
    pthread_t t;
    pthread_create(&t, NULL, waiter_thread, &w);
    zhandle_t *raw = zkt_raw();
    CU_ASSERT_TRUE(wait_children(raw, p, 2, 10000)); /* its own node */
    zkt_sleep_ms(200);
    CU_ASSERT_EQUAL(atomic_load(&w.acquired_as), 0); /* still blocked */
    CU_ASSERT_TRUE(zkr_mutex_is_held_by_process(m));
    CU_ASSERT_EQUAL(zkr_mutex_release(m), ZKR_OK);
    held_want_t hw = {&w, 1, 1};
    CU_ASSERT_TRUE(zkt_wait_for(held_is, &hw, 10000));
    CU_ASSERT_FALSE(zkr_mutex_is_held(m)); /* held by the other thread */
    atomic_store(&w.go, 1);
    pthread_join(t, NULL);
    CU_ASSERT_TRUE(wait_children(raw, p, 0, 5000));
    zkt_raw_close(raw);
    zkr_mutex_free(m);
    zkr_client_close(c);
}

/* ---- killed holder -------------------------------------------------------------------- */

static void test_killed_holder(void)
{
    char p[128];
    zkt_path("killed", p, sizeof p);
    int fds[2];
    CU_ASSERT_EQUAL_FATAL(pipe(fds), 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        zkr_client_options_t o;
        zkr_client_options_init(&o);
        o.session_timeout_ms = 2000;
        o.zk_log_level = 0;
        zkr_client_t *c = NULL;
        zkr_mutex_t *m = NULL;
        char ok = 'n';
        if (zkr_client_open(&c, zkt_hosts(), &o) == ZKR_OK && zkr_mutex_new(&m, c, p) == ZKR_OK &&
            zkr_mutex_acquire(m, 5000) == ZKR_OK)
            ok = 'y';
        if (write(fds[1], &ok, 1) != 1)
            _exit(3);
        for (;;)
            pause();
    }
    close(fds[1]);
    char got = 0;
    CU_ASSERT_EQUAL_FATAL(read(fds[0], &got, 1), 1);
    close(fds[0]);
    CU_ASSERT_EQUAL(got, 'y');
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);

    zkr_client_t *b = zkt_client(SESSION_MS);
    zkr_mutex_t *mb;
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&mb, b, p), ZKR_OK);
    int64_t t0 = zkt_now_ms();
    CU_ASSERT_EQUAL(zkr_mutex_acquire(mb, 20000), ZKR_OK); /* once the session expires */
    printf("\n    acquired %lld ms after the holder was killed\n", (long long)(zkt_now_ms() - t0));
    CU_ASSERT_EQUAL(zkr_mutex_release(mb), ZKR_OK);
    zkr_mutex_free(mb);
    zkr_client_close(b);
    zhandle_t *raw = zkt_raw();
    CU_ASSERT_EQUAL(zkt_count_children(raw, p), 0);
    zkt_raw_close(raw);
}

/* ---- tokens, participants, revocation -------------------------------------------------- */

static void test_fencing_tokens_increase(void)
{
    char p[128];
    zkt_path("tokens", p, sizeof p);
    zkr_client_t *cs[3];
    zkr_mutex_t *ms[3];
    for (int i = 0; i < 3; i++) {
        cs[i] = zkt_client(SESSION_MS);
        CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&ms[i], cs[i], p), ZKR_OK);
    }
    int64_t last = -1, tok = 0;
    CU_ASSERT_EQUAL(zkr_mutex_fencing_token(ms[0], &tok), ZKR_ENOTOWNER);
    for (int r = 0; r < 30; r++) {
        zkr_mutex_t *m = ms[r % 3];
        CU_ASSERT_EQUAL_FATAL(zkr_mutex_acquire(m, 5000), ZKR_OK);
        CU_ASSERT_EQUAL(zkr_mutex_fencing_token(m, &tok), ZKR_OK);
        CU_ASSERT_TRUE(tok > last);
        /* Reentering does not change the token. */
        int64_t again = 0;
        CU_ASSERT_EQUAL(zkr_mutex_acquire(m, 0), ZKR_OK);
        zkr_mutex_fencing_token(m, &again);
        CU_ASSERT_EQUAL(again, tok);
        zkr_mutex_release(m);
        last = tok;
        CU_ASSERT_EQUAL(zkr_mutex_release(m), ZKR_OK);
    }
    for (int i = 0; i < 3; i++) {
        zkr_mutex_free(ms[i]);
        zkr_client_close(cs[i]);
    }
}

static int is_digits(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return 0;
    return s[n] == '\0';
}

static void test_participants_names(void)
{
    zkr_client_t *a = zkt_client(SESSION_MS), *b = zkt_client(SESSION_MS);
    char p[128];
    zkt_path("participants", p, sizeof p);
    zkr_mutex_t *ma, *mb;
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&ma, a, p), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&mb, b, p), ZKR_OK);
    char **none = NULL;
    size_t nn = 9;
    CU_ASSERT_EQUAL(zkr_mutex_participants(ma, &none, &nn), ZKR_OK); /* no directory yet */
    CU_ASSERT_EQUAL(nn, 0);
    zkr_strings_free(none, nn);
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_acquire(ma, 5000), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_mutex_acquire(mb, 100), ZKR_ETIMEDOUT);
    try_arg_t t = {mb, 10000, -99, -99};
    pthread_t th;
    pthread_create(&th, NULL, try_thread, &t);
    zhandle_t *raw = zkt_raw();
    CU_ASSERT_TRUE(wait_children(raw, p, 2, 10000));
    char **parts = NULL;
    size_t n = 0;
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_participants(mb, &parts, &n), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(n, 2);
    char *mine = NULL;
    CU_ASSERT_EQUAL(zkr_mutex_node_path(ma, &mine), ZKR_OK);
    CU_ASSERT_STRING_EQUAL(parts[0], mine); /* holder first */
    size_t pl = strlen(p);
    for (size_t i = 0; i < n; i++) {
        const char *s = parts[i];
        CU_ASSERT_TRUE(strncmp(s, p, pl) == 0 && s[pl] == '/');
        const char *name = s + pl + 1;
        CU_ASSERT_EQUAL(strlen(name), 3 + 36 + 1 + 5 + 10);
        CU_ASSERT_TRUE(strncmp(name, "_c_", 3) == 0);
        CU_ASSERT_TRUE(name[3 + 8] == '-' && name[3 + 13] == '-' && name[3 + 18] == '-' && name[3 + 23] == '-');
        CU_ASSERT_TRUE(strncmp(name + 3 + 36, "-lock-", 6) == 0);
        CU_ASSERT_TRUE(is_digits(name + 3 + 36 + 6, 10));
    }
    CU_ASSERT_TRUE(strcmp(parts[0] + pl + 46, parts[1] + pl + 46) < 0); /* sequence order */
    free(mine);
    zkr_strings_free(parts, n);
    CU_ASSERT_EQUAL(zkr_mutex_release(ma), ZKR_OK);
    pthread_join(th, NULL);
    CU_ASSERT_EQUAL(t.rc, ZKR_OK);
    CU_ASSERT_EQUAL(t.release_rc, ZKR_OK);
    zkt_raw_close(raw);
    zkr_mutex_free(ma);
    zkr_mutex_free(mb);
    zkr_client_close(a);
    zkr_client_close(b);
}

static void on_revoke(zkr_mutex_t *m, void *ctx)
{
    (void)m;
    atomic_fetch_add((atomic_int *)ctx, 1);
}

static int flag_set(void *p)
{
    return atomic_load((atomic_int *)p) > 0;
}

static void test_revocation(void)
{
    zkr_client_t *a = zkt_client(SESSION_MS), *b = zkt_client(SESSION_MS);
    char p[128];
    zkt_path("revoke", p, sizeof p);
    zkr_mutex_t *ma, *mb;
    atomic_int asked = 0;
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&ma, a, p), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&mb, b, p), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_mutex_make_revocable(ma, on_revoke, &asked), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_acquire(ma, 5000), ZKR_OK);
    char **parts = NULL;
    size_t n = 0;
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_participants(mb, &parts, &n), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(n, 1);
    zkt_sleep_ms(100);
    CU_ASSERT_EQUAL(atomic_load(&asked), 0);
    CU_ASSERT_EQUAL(zkr_revoke_request(b, parts[0]), ZKR_OK);
    CU_ASSERT_TRUE(zkt_wait_for(flag_set, &asked, 10000));
    CU_ASSERT_EQUAL(zkr_mutex_release(ma), ZKR_OK); /* the holder decides to let go */
    CU_ASSERT_EQUAL(zkr_mutex_acquire(mb, 5000), ZKR_OK);
    /* A request for a node that is gone is not an error. */
    CU_ASSERT_EQUAL(zkr_revoke_request(b, parts[0]), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_mutex_release(mb), ZKR_OK);
    zkr_strings_free(parts, n);
    zkr_mutex_free(ma);
    zkr_mutex_free(mb);
    zkr_client_close(a);
    zkr_client_close(b);
}

/* ---- bad arguments ---------------------------------------------------------------------- */

static void test_bad_arguments(void)
{
    zkr_client_t *c = zkt_client(SESSION_MS);
    zkr_mutex_t *m = (zkr_mutex_t *)0x1;
    const char *bad[] = {"", "relative", "/trailing/", "/a//b", "/zookeeper/x", "/", "/a/./b", "/a/../b", NULL};
    CU_ASSERT_EQUAL(zkr_mutex_new(&m, c, NULL), ZKR_EINVAL);
    CU_ASSERT_PTR_NULL(m);
    for (int i = 0; bad[i]; i++)
        CU_ASSERT_EQUAL(zkr_mutex_new(&m, c, bad[i]), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_mutex_new(NULL, c, "/ok"), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_mutex_new(&m, NULL, "/ok"), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_mutex_acquire(NULL, 0), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_mutex_release(NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_mutex_is_held(NULL), 0);
    CU_ASSERT_EQUAL(zkr_mutex_is_held_by_process(NULL), 0);
    CU_ASSERT_EQUAL(zkr_mutex_hold_state(NULL), ZKR_HOLD_NONE);
    CU_ASSERT_EQUAL(zkr_mutex_set_hold_listener(NULL, NULL, NULL), ZKR_EINVAL);
    int64_t tok;
    char *path;
    char **parts;
    size_t n;
    CU_ASSERT_EQUAL(zkr_mutex_fencing_token(NULL, &tok), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_mutex_node_path(NULL, &path), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_mutex_participants(NULL, &parts, &n), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_mutex_make_revocable(NULL, on_revoke, NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_revoke_request(NULL, "/a"), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_revoke_request(c, "bad"), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_revoke_request(c, NULL), ZKR_EINVAL);
    zkr_mutex_t *ok;
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&ok, c, "/zkr-test/bad-args"), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_mutex_fencing_token(ok, NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_mutex_node_path(ok, NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_mutex_participants(ok, NULL, &n), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_mutex_participants(ok, &parts, NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_mutex_fencing_token(ok, &tok), ZKR_ENOTOWNER);
    CU_ASSERT_EQUAL(zkr_mutex_node_path(ok, &path), ZKR_ENOTOWNER);
    CU_ASSERT_EQUAL(zkr_mutex_release(ok), ZKR_ENOTOWNER);
    zkr_mutex_free(ok);
    zkr_mutex_free(NULL);
    zkr_strings_free(NULL, 0);
    zkr_client_close(c);
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("mutex", NULL, NULL);
    CU_add_test(s, "bad arguments", test_bad_arguments);
    CU_add_test(s, "reentrancy and ownership", test_reentrancy);
    CU_add_test(s, "timeouts leave no node behind", test_timeouts_leave_nothing);
    CU_add_test(s, "two threads on one object queue separately", test_threads_share_object);
    CU_add_test(s, "fencing tokens strictly increase", test_fencing_tokens_increase);
    CU_add_test(s, "participants: holder first, Curator names", test_participants_names);
    CU_add_test(s, "revocation", test_revocation);
    CU_add_test(s, "herd: one data watch per waiter on its predecessor; FIFO; one wake per release",
                test_herd_and_fifo);
    CU_add_test(s, "killed holder: next waiter gets in after expiry, nothing left", test_killed_holder);
    CU_add_test(s, "mutual exclusion: threads, shared object, processes", test_mutual_exclusion);
}

int main(void)
{
    return zkt_main("mutex", add_suites);
}

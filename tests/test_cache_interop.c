/* zkr_cache_t and Apache Curator 5.4 (Debian's jars) on the same paths: the
 * Java side is tests/interop/CachePeer.java, driven over a pipe.
 *
 *  - Curator writes (random creates, setData, deletes of leaves and of
 *    subtrees with deletingChildrenIfNeeded, a node deleted and created
 *    again with the same data, in two requests or one transaction, the
 *    cached path itself deleted and created again) while C caches watch:
 *    ZKR_CACHE_TREE (with and without data, and down to a max_depth),
 *    ZKR_CACHE_NODE, ZKR_CACHE_CHILDREN.  At the end each C copy
 *    (zkr_cache_walk, zkr_cache_get, zkr_cache_children) equals the
 *    server's tree as the raw C client reads it (paths, data, czxid,
 *    mzxid), and the events the listener was told are valid per node
 *    (CREATED first, CHANGED and DELETED only of a node in the copy, no
 *    CREATED twice without a DELETED between, a new czxid after each
 *    DELETED) and, replayed, give the copy.
 *  - C writes (the raw C client) while Curator's TreeCache and a C cache
 *    watch: at the end both hold the server's tree.
 *
 * Every wait is bounded; no test asserts a speed. */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/cache_check.h"
#include "tests/harness/zkr_test.h"
#include "tests/interop/jpeer.h"

#define SESSION_MS 10000
#define CONVERGE_MS 20000
#define INIT_MS 20000

static int suite_init(void)
{
    jpeer_java = jpeer_start("CachePeer");
    return jpeer_java ? 0 : 1;
}

static int suite_clean(void)
{
    jpeer_stop(jpeer_java);
    jpeer_java = NULL;
    return 0;
}

/* ---- helpers ------------------------------------------------------------------------------- */

/* The server's tree in t's scope (read once: nothing writes meanwhile). */
static void server_tree(zhandle_t *zh, const cc_scope_t *s, cc_tree_t *out)
{
    char why[256];
    int rc = cc_server_tree(zh, s, out, why, sizeof why);
    if (rc != 0)
        printf("\n    reading the server: %s", why);
    CC_ASSERT_FATAL(rc == 0);
}

/* Wait until t's copy and its events equal the server's tree; assert the
 * event rules; print how long it took.  Returns 1 if all held. */
static int converge(cc_cache_t *t, zhandle_t *zh, int what)
{
    cc_tree_t srv = {0};
    server_tree(zh, &t->scope, &srv);
    cc_result_t r;
    int ok = cc_converge(t, &srv, what, CONVERGE_MS, stdout, &r) == 0;
    printf("\n    %s: %zu nodes, %zu events; the copy equal to the server %s%lld ms after the last write", t->name,
           srv.n, r.events, r.ms < 0 ? "NOT within " : "", (long long)(r.ms < 0 ? CONVERGE_MS : r.ms));
    CU_ASSERT_TRUE(r.ms >= 0);
    CU_ASSERT_EQUAL(r.walk_rc, ZKR_OK);
    CU_ASSERT_TRUE(r.ordered);
    CU_ASSERT_EQUAL(r.out_of_scope, 0);
    CU_ASSERT_EQUAL(r.violations, 0);
    if (r.ms >= 0 && t->scope.shape != ZKR_CACHE_CHILDREN) {
        size_t size = zkr_cache_size(t->cache);
        if (size != srv.n)
            printf("\n    %s: zkr_cache_size %zu, the server has %zu nodes", t->name, size, srv.n);
        CU_ASSERT_EQUAL(size, srv.n);
    }
    CU_ASSERT_EQUAL(zkr_cache_is_fresh(t->cache), 1);
    cc_tree_clear(&srv);
    return ok;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* zkr_cache_get and zkr_cache_children agree with the server, node by
 * node (the copy has converged). */
static void check_reads(cc_cache_t *t, zhandle_t *zh)
{
    cc_tree_t srv = {0};
    server_tree(zh, &t->scope, &srv);
    int bad = 0;
    for (size_t i = 0; i < srv.n; i++) {
        const cc_node_t *s = &srv.v[i];
        zkr_cache_node_t *n = NULL;
        int rc = zkr_cache_get(t->cache, s->path, &n);
        if (rc != ZKR_OK || !n) {
            if (bad++ < 5)
                printf("\n    zkr_cache_get %s: %s", s->path, zkr_strerror(rc));
            continue;
        }
        int same = strcmp(n->path, s->path) == 0 && n->stat.czxid == s->czxid && n->stat.mzxid == s->mzxid &&
                   n->stat.version == s->version;
        if (t->scope.data)
            same = same && n->data && n->data_len == s->len && memcmp(n->data, s->data, s->len) == 0 &&
                   n->data[n->data_len] == '\0';
        else
            same = same && !n->data;
        if (!same && bad++ < 5)
            printf("\n    zkr_cache_get %s: czxid %lld mzxid %lld version %d, %zu bytes; the server's %lld %lld %d, "
                   "%zu bytes", s->path, (long long)n->stat.czxid, (long long)n->stat.mzxid, n->stat.version,
                   n->data_len, (long long)s->czxid, (long long)s->mzxid, s->version, s->len);
        zkr_cache_node_free(n);
    }
    /* the children of every node whose children are cached (CHILDREN: the
     * path's, while it exists) */
    if (t->scope.shape == ZKR_CACHE_CHILDREN) {
        struct Stat st;
        if (zoo_exists(zh, t->root, 0, &st) == ZOK)
            cc_tree_add(&srv, t->root, NULL, 0, 0, st.czxid, st.mzxid, st.version, 0);
        cc_tree_sort(&srv);
    }
    for (size_t i = 0; i < srv.n; i++) {
        const cc_node_t *s = &srv.v[i];
        if (t->scope.shape == ZKR_CACHE_NODE || (t->scope.shape == ZKR_CACHE_CHILDREN && s->depth != 0) ||
            (t->scope.max_depth >= 0 && s->depth >= t->scope.max_depth))
            continue;
        struct String_vector ch;
        memset(&ch, 0, sizeof ch);
        if (zoo_get_children(zh, s->path, 0, &ch) != ZOK)
            continue;
        char **names = NULL;
        size_t count = 0;
        int rc = zkr_cache_children(t->cache, s->path, &names, &count);
        char **want = calloc((size_t)ch.count + 1, sizeof *want);
        for (int k = 0; k < ch.count; k++)
            want[k] = ch.data[k];
        qsort(want, (size_t)ch.count, sizeof *want, by_name);
        int same = rc == ZKR_OK && count == (size_t)ch.count;
        for (size_t k = 0; same && k < count; k++)
            same = strcmp(names[k], want[k]) == 0;
        if (!same && bad++ < 5) {
            char *a = jpeer_joined(names, count), *b = jpeer_joined(want, (size_t)ch.count);
            printf("\n    zkr_cache_children %s: %s '%s', the server's '%s'", s->path, zkr_strerror(rc), a, b);
            free(a);
            free(b);
        }
        free(want);
        zkr_strings_free(names, count);
        deallocate_String_vector(&ch);
    }
    CU_ASSERT_EQUAL(bad, 0);
    cc_tree_clear(&srv);
}

/* The events before the first INITIALIZED, replayed, equal what the server
 * held when the cache started (nothing was written until then). */
static void check_initial_load(cc_cache_t *t, const cc_tree_t *before)
{
    size_t at = cc_log_index(&t->log, ZKR_CACHE_INITIALIZED, 0);
    CC_ASSERT_FATAL(at != (size_t)-1);
    cc_tree_t model = {0};
    int bad = cc_log_check(&t->log, &t->scope, &model, stdout, t->name, at);
    CU_ASSERT_EQUAL(bad, 0);
    char why[1024];
    int d = cc_tree_diff(before, "the server", &model, "the events before INITIALIZED", CC_CMP_ALL, why, sizeof why);
    if (d)
        printf("\n    %s: the first load told %d differences:%s", t->name, d, why);
    CU_ASSERT_EQUAL(d, 0);
    cc_tree_clear(&model);
}

/* Run a Java command that answers "DONE ..." (printed). */
static void java_done(const char *label, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void java_done(const char *label, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *r = jpeer_vcmd(jpeer_java, JPEER_REPLY_MS, fmt, ap);
    va_end(ap);
    printf("\n    %s: %s", label, r);
    CU_ASSERT_TRUE(strncmp(r, "DONE ", 5) == 0);
    free(r);
}

/* "OK czxid mzxid version" (or "OK oldczxid czxid mzxid version" when old
 * is not NULL) of a Java write; asserts it is one. */
static void java_write(int64_t *old, int64_t *cz, int64_t *mz, int *ver, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void java_write(int64_t *old, int64_t *cz, int64_t *mz, int *ver, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *r = jpeer_vcmd(jpeer_java, JPEER_REPLY_MS, fmt, ap);
    va_end(ap);
    long long a = 0, b = 0, c = 0;
    int v = 0, ok;
    if (old)
        ok = sscanf(r, "OK %lld %lld %lld %d", &a, &b, &c, &v) == 4;
    else
        ok = sscanf(r, "OK %lld %lld %d", &b, &c, &v) == 3;
    if (!ok)
        printf("\n    java: '%s'", r);
    CC_ASSERT_FATAL(ok);
    if (old)
        *old = a;
    *cz = b;
    *mz = c;
    *ver = v;
    free(r);
}

static zkr_client_t *client;
static zhandle_t *raw;

static int setup(void)
{
    if (suite_init() != 0)
        return 1;
    client = zkt_plain_client(SESSION_MS);
    raw = zkt_plain_raw();
    return client && raw ? 0 : 1;
}

static int teardown(void)
{
    zkr_client_close(client);
    if (raw)
        zookeeper_close(raw);
    return suite_clean();
}

/* ---- the test's own tools ---------------------------------------------------------------------- */

static atomic_int hold_release;

/* Holds the listener just before it records INITIALIZED, until released
 * (at most 3 s). */
static void hold_initialized(const zkr_cache_event_t *ev)
{
    if (ev->type != ZKR_CACHE_INITIALIZED)
        return;
    for (int i = 0; i < 300 && !atomic_load(&hold_release); i++)
        zkt_sleep_ms(10);
}

/* cc_cache_open returns once the listener was told INITIALIZED: the event
 * must be in the log by then (check_initial_load looks for it at once),
 * however late the callback thread records it. */
static void test_open_logs_initialized(void)
{
    char p[128], a[160];
    zkt_path("open-logged", p, sizeof p);
    snprintf(a, sizeof a, "%s/a", p);
    cc_make_parents(raw, a);
    CU_ASSERT_EQUAL(zoo_create(raw, a, "A", 1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
    atomic_store(&hold_release, 0);
    cc_before_record = hold_initialized;
    cc_cache_t t;
    int rc = cc_cache_open(&t, client, p, ZKR_CACHE_TREE, -1, 1, "TREE", INIT_MS);
    size_t at = rc == ZKR_OK ? cc_log_index(&t.log, ZKR_CACHE_INITIALIZED, 0) : (size_t)-1;
    int inits = rc == ZKR_OK ? atomic_load(&t.log.inits) : -1;
    atomic_store(&hold_release, 1);
    if (rc == ZKR_OK && at == (size_t)-1)
        printf("\n    cc_cache_open returned (INITIALIZED counted %d), the log has no INITIALIZED", inits);
    CU_ASSERT_EQUAL(rc, ZKR_OK);
    CU_ASSERT_NOT_EQUAL(at, (size_t)-1);
    if (rc == ZKR_OK)
        cc_cache_close(&t);
    cc_before_record = NULL;
}

/* ---- Curator writes, C caches ---------------------------------------------------------------- */

/* The path does not exist when the caches start; Curator writes 300
 * random operations (paced) and 200 more (back to back); after each round
 * the copies equal the server's tree. */
static void test_tree_curator_writer(void)
{
    char p[128];
    zkt_path("tree-java", p, sizeof p);
    cc_make_parents(raw, p);
    cc_cache_t full, shallow;
    CC_ASSERT_FATAL(cc_cache_open(&full, client, p, ZKR_CACHE_TREE, -1, 1, "TREE", INIT_MS) == ZKR_OK);
    CC_ASSERT_FATAL(cc_cache_open(&shallow, client, p, ZKR_CACHE_TREE, 2, 1, "TREE max_depth 2", INIT_MS) ==
                    ZKR_OK);
    /* nothing there yet */
    CU_ASSERT_EQUAL(zkr_cache_size(full.cache), 0);
    zkr_cache_node_t *n = (zkr_cache_node_t *)1;
    CU_ASSERT_EQUAL(zkr_cache_get(full.cache, p, &n), ZKR_ENONODE);
    CU_ASSERT_EQUAL(zkr_cache_is_fresh(full.cache), 1);
    CU_ASSERT_EQUAL(cc_log_has(&full.log, 0, ZKR_CACHE_CREATED, 0), 0); /* INITIALIZED alone */

    java_done("Curator, 300 random writes (paced)", "random %s 20240501 300 3 2000", p);
    converge(&full, raw, CC_CMP_ALL);
    converge(&shallow, raw, CC_CMP_ALL);
    java_done("Curator, 200 random writes (back to back)", "random %s 777 200 3 0", p);
    converge(&full, raw, CC_CMP_ALL);
    converge(&shallow, raw, CC_CMP_ALL);
    check_reads(&full, raw);
    check_reads(&shallow, raw);
    /* no session was lost: one INITIALIZED each */
    CU_ASSERT_EQUAL(atomic_load(&full.log.inits), 1);
    CU_ASSERT_EQUAL(atomic_load(&shallow.log.inits), 1);
    /* outside the cache: refused */
    CU_ASSERT_EQUAL(zkr_cache_get(full.cache, "/zkr-test", &n), ZKR_EINVAL);
    CU_ASSERT_PTR_NULL(n);
    cc_cache_close(&full);
    cc_cache_close(&shallow);
}

/* Without data: created and deleted are told (CHANGED never), each node
 * with the czxid of the node on the server. */
static void test_tree_without_data_curator_writer(void)
{
    char p[128];
    zkt_path("tree-nodata-java", p, sizeof p);
    cc_make_parents(raw, p);
    cc_cache_t t;
    CC_ASSERT_FATAL(cc_cache_open(&t, client, p, ZKR_CACHE_TREE, -1, 0, "TREE without data", INIT_MS) == ZKR_OK);
    java_done("Curator, 300 random writes", "random %s 4242 300 3 2000", p);
    converge(&t, raw, 0);
    CU_ASSERT_EQUAL(cc_log_has(&t.log, 0, ZKR_CACHE_CHANGED, 0), 0);
    cc_cache_close(&t);
}

/* ZKR_CACHE_NODE, as NodeCache: the node created, changed, deleted,
 * created again; deleted and created again with the same data and version
 * (two requests, then one transaction) is told DELETED then CREATED; a
 * child of it is not cached.  Then 200 random writes on the node. */
static char *node_events;
static int node_events_n(void *arg)
{
    cc_cache_t *t = arg;
    free(node_events);
    node_events = cc_log_of(&t->log, t->root, 0);
    int n = node_events[0] ? 1 : 0;
    for (const char *s = node_events; *s; s++)
        n += *s == ' ';
    return n;
}

static int want_events;
static int node_events_reached(void *arg)
{
    return node_events_n(arg) >= want_events;
}

static void expect_node_events(cc_cache_t *t, const char *want)
{
    int n = 1;
    for (const char *s = want; *s; s++)
        n += *s == ' ';
    want_events = n;
    zkt_wait_for(node_events_reached, t, 10000);
    zkt_sleep_ms(200); /* nothing more comes */
    node_events_n(t);
    if (strcmp(node_events, want) != 0)
        printf("\n    events of %s:\n      told   %s\n      wanted %s", t->root, node_events, want);
    CU_ASSERT_STRING_EQUAL(node_events, want);
}

static void test_node_curator_writer(void)
{
    char p[128], child[160], want[1024] = "";
    zkt_path("node-java", p, sizeof p);
    snprintf(child, sizeof child, "%s/child", p);
    cc_make_parents(raw, p);
    cc_cache_t t;
    CC_ASSERT_FATAL(cc_cache_open(&t, client, p, ZKR_CACHE_NODE, -1, 1, "NODE", INIT_MS) == ZKR_OK);
    CU_ASSERT_EQUAL(zkr_cache_size(t.cache), 0);
    int64_t old, cz, mz;
    int ver;
#define WANT(type, c, m)                                                                                 \
    snprintf(want + strlen(want), sizeof want - strlen(want), "%s%s:%lld:%lld", want[0] ? " " : "", type, \
             (long long)(c), (long long)(m))
    java_write(NULL, &cz, &mz, &ver, "create %s hello", p);
    WANT("CREATED", cz, mz);
    expect_node_events(&t, want);
    int64_t cz1 = cz;
    java_write(NULL, &cz, &mz, &ver, "set %s world", p);
    CU_ASSERT_EQUAL(cz, cz1);
    WANT("CHANGED", cz, mz);
    expect_node_events(&t, want);
    zkr_cache_node_t *n = NULL;
    CC_ASSERT_FATAL(zkr_cache_get(t.cache, p, &n) == ZKR_OK);
    CU_ASSERT_TRUE(n->data_len == 5 && memcmp(n->data, "world", 5) == 0);
    zkr_cache_node_free(n);
    /* a child: not cached, not told */
    int64_t ccz, cmz;
    java_write(NULL, &ccz, &cmz, &ver, "create %s x", child);
    zkt_sleep_ms(300);
    CU_ASSERT_EQUAL(zkr_cache_size(t.cache), 1);
    n = NULL;
    CU_ASSERT_NOT_EQUAL(zkr_cache_get(t.cache, child, &n), ZKR_OK);
    zkr_cache_node_free(n);
    char *ce = cc_log_of(&t.log, child, 0);
    CU_ASSERT_STRING_EQUAL(ce, "");
    free(ce);
    /* deleted (with its child), created again */
    int64_t last_m = mz;
    CU_ASSERT_TRUE(jis("OK", "rmr %s", p));
    WANT("DELETED", cz, last_m);
    expect_node_events(&t, want);
    CU_ASSERT_EQUAL(zkr_cache_size(t.cache), 0);
    java_write(NULL, &cz, &mz, &ver, "create %s hello", p);
    CU_ASSERT_TRUE(cz > cz1);
    WANT("CREATED", cz, mz);
    expect_node_events(&t, want);
    /* deleted and created again with the same data and version */
    for (int round = 0; round < 2; round++) {
        int64_t pcz = cz, pmz = mz;
        int pver = ver;
        java_write(&old, &cz, &mz, &ver, "%s %s", round ? "txrecreate" : "recreate", p);
        CU_ASSERT_EQUAL(old, pcz);
        CU_ASSERT_EQUAL(ver, pver); /* the same version (0), the same data */
        CU_ASSERT_TRUE(cz > pcz);
        WANT("DELETED", pcz, pmz);
        WANT("CREATED", cz, mz);
        printf("\n    %s: version %d, data \"hello\" both times: told", round ? "in one transaction" : "two requests",
               ver);
        expect_node_events(&t, want);
        n = NULL;
        CC_ASSERT_FATAL(zkr_cache_get(t.cache, p, &n) == ZKR_OK);
        CU_ASSERT_EQUAL(n->stat.czxid, cz);
        CU_ASSERT_TRUE(n->data_len == 5 && memcmp(n->data, "hello", 5) == 0);
        zkr_cache_node_free(n);
    }
    printf(" %s", want);
#undef WANT
    converge(&t, raw, CC_CMP_ALL);
    /* random writes on the node alone */
    java_done("Curator, 200 random writes on the node", "nodeops %s 99 200 2000", p);
    converge(&t, raw, CC_CMP_ALL);
    java_done("Curator, 200 random writes on the node (back to back)", "nodeops %s 100 200 0", p);
    converge(&t, raw, CC_CMP_ALL);
    check_reads(&t, raw);
    CU_ASSERT_EQUAL(atomic_load(&t.log.inits), 1);
    free(node_events);
    node_events = NULL;
    cc_cache_close(&t);
}

/* ZKR_CACHE_CHILDREN, as PathChildrenCache: started on a path with
 * children (the first load tells each of them, then INITIALIZED); Curator
 * writes children and grandchildren (only the children are cached, the
 * path itself is never told); the path deleted with all below it, and
 * created again. */

typedef struct path_gone {
    zkr_cache_t *cache;
    const char *path;
} path_gone_t;

static int path_gone(void *arg)
{
    path_gone_t *g = arg;
    char **names = NULL;
    size_t n = 0;
    int rc = zkr_cache_children(g->cache, g->path, &names, &n);
    zkr_strings_free(names, n);
    return rc == ZKR_ENONODE;
}

static void test_children_curator_writer(void)
{
    char p[128];
    zkt_path("children-java", p, sizeof p);
    cc_make_parents(raw, p);
    int64_t cz, mz;
    int ver;
    java_write(NULL, &cz, &mz, &ver, "create %s root", p);
    const char *kids[] = {"a", "b", "c", "c/x", "c/x/y", "d"};
    for (size_t i = 0; i < sizeof kids / sizeof *kids; i++)
        java_write(NULL, &cz, &mz, &ver, "create %s/%s %s", p, kids[i], i % 2 ? "-" : kids[i]);
    cc_scope_t scope = {p, ZKR_CACHE_CHILDREN, -1, 1};
    cc_tree_t before = {0};
    server_tree(raw, &scope, &before);
    CU_ASSERT_EQUAL(before.n, 4);
    cc_cache_t t;
    CC_ASSERT_FATAL(cc_cache_open(&t, client, p, ZKR_CACHE_CHILDREN, -1, 1, "CHILDREN", INIT_MS) == ZKR_OK);
    check_initial_load(&t, &before);
    cc_tree_clear(&before);
    java_done("Curator, 300 random writes (children and below)", "random %s 31337 300 2 2000", p);
    converge(&t, raw, CC_CMP_ALL);
    check_reads(&t, raw);
    char *pe = cc_log_of(&t.log, p, 0);
    CU_ASSERT_STRING_EQUAL(pe, ""); /* the path itself is never told */
    free(pe);
    /* the path goes: every child told DELETED; zkr_cache_children says
     * ENONODE; back with one child */
    CU_ASSERT_TRUE(jis("OK", "rmr %s", p));
    converge(&t, raw, CC_CMP_ALL);
    /* (the children may go before the path's own deletion is read) */
    path_gone_t g = {t.cache, p};
    CU_ASSERT_TRUE(zkt_wait_for(path_gone, &g, 20000));
    char **names = NULL;
    size_t count = 7;
    CU_ASSERT_EQUAL(zkr_cache_children(t.cache, p, &names, &count), ZKR_ENONODE);
    CU_ASSERT_EQUAL(count, 0);
    zkr_strings_free(names, count);
    java_write(NULL, &cz, &mz, &ver, "create %s back", p);
    java_write(NULL, &cz, &mz, &ver, "create %s/again x", p);
    converge(&t, raw, CC_CMP_ALL);
    check_reads(&t, raw);
    CU_ASSERT_EQUAL(atomic_load(&t.log.inits), 1);
    cc_cache_close(&t);
}

/* ---- C writes, Curator's TreeCache and a C cache --------------------------------------------- */

/* Curator's TreeCache as "TREE n" and n lines "path czxid mzxid len crc". */
static int java_tree(const char *name, cc_tree_t *out, const char *root)
{
    cc_tree_clear(out);
    char *r = jcmd("dump %s", name);
    int n = -1;
    if (sscanf(r, "TREE %d", &n) != 1) {
        printf("\n    java: dump: '%s'", r);
        free(r);
        return -1;
    }
    free(r);
    for (int i = 0; i < n; i++) {
        char *line = jpeer_line(jpeer_java, 10000);
        char path[1024];
        long long cz, mz;
        size_t len;
        unsigned long crc;
        if (!line || sscanf(line, "%1023s %lld %lld %zu %lu", path, &cz, &mz, &len, &crc) != 5) {
            printf("\n    java: dump line %d: '%s'", i, line ? line : "(none)");
            free(line);
            return -1;
        }
        cc_tree_add(out, path, NULL, len, (uint32_t)crc, cz, mz, 0, cc_depth(root, path));
        free(line);
    }
    cc_tree_sort(out);
    return 0;
}

static void test_treecache_c_writer(void)
{
    char p[128];
    zkt_path("treecache", p, sizeof p);
    cc_make_parents(raw, p);
    unsigned seed = 20240502;
    cc_wstats_t st;
    memset(&st, 0, sizeof st);
    /* something there before either cache starts */
    for (int i = 0; i < 40; i++)
        cc_random_op(raw, p, 3, &seed, &st);
    cc_scope_t scope = {p, ZKR_CACHE_TREE, -1, 1};
    cc_tree_t before = {0};
    server_tree(raw, &scope, &before);
    cc_cache_t t;
    CC_ASSERT_FATAL(cc_cache_open(&t, client, p, ZKR_CACHE_TREE, -1, 1, "TREE", INIT_MS) == ZKR_OK);
    check_initial_load(&t, &before);
    CC_ASSERT_FATAL(jis("STARTED", "treecache T %s", p));
    cc_tree_t jt = {0};
    char why[2048];
    CU_ASSERT_EQUAL(java_tree("T", &jt, p), 0);
    int d = cc_tree_diff(&before, "the server", &jt, "Curator's TreeCache", CC_CMP_ALL, why, sizeof why);
    if (d)
        printf("\n    TreeCache initialized: %d differences:%s", d, why);
    CU_ASSERT_EQUAL(d, 0);
    cc_tree_clear(&before);

    /* three rounds of 100 random writes, both copies compared after each */
    cc_tree_t srv = {0}, copy = {0};
    for (int round = 0; round < 3; round++) {
        memset(&st, 0, sizeof st);
        for (int i = 0; i < 100; i++) {
            cc_random_op(raw, p, 3, &seed, &st);
            zkt_jitter(&seed, 2000);
        }
        cc_wstats_print(stdout, &st, "C, 100 random writes");
        converge(&t, raw, CC_CMP_ALL);
        check_reads(&t, raw);

        /* Curator's copy: polled (bounded) until it equals the server's */
        server_tree(raw, &scope, &srv);
        int64_t t0 = zkt_now_ms();
        int same = 0;
        for (int i = 0; i < 1000 && !same && zkt_now_ms() - t0 < CONVERGE_MS; i++) {
            if (java_tree("T", &jt, p) != 0)
                break;
            same = cc_tree_diff(&srv, "the server", &jt, "Curator's TreeCache", CC_CMP_ALL, NULL, 0) == 0;
            if (!same)
                zkt_sleep_ms(50);
        }
        if (!same) {
            d = cc_tree_diff(&srv, "the server", &jt, "Curator's TreeCache", CC_CMP_ALL, why, sizeof why);
            printf("\n    Curator's TreeCache: %d differences:%s", d, why);
        }
        printf("\n    Curator's TreeCache: %zu nodes, equal to the server's tree: %s", jt.n, same ? "yes" : "NO");
        CU_ASSERT_TRUE(same);
        /* and the two copies, side by side */
        CU_ASSERT_EQUAL(cc_cache_tree(t.cache, &t.scope, &copy, NULL, NULL), 0);
        d = cc_tree_diff(&copy, "the C copy", &jt, "Curator's TreeCache", CC_CMP_ALL, why, sizeof why);
        if (d)
            printf("\n    the C copy and Curator's: %d differences:%s", d, why);
        CU_ASSERT_EQUAL(d, 0);
    }
    CU_ASSERT_TRUE(jis("CLOSED", "closecache T"));
    cc_tree_clear(&copy);
    cc_tree_clear(&jt);
    cc_tree_clear(&srv);
    cc_cache_close(&t);
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("cache interop", setup, teardown);
    CU_add_test(s, "cc_cache_open: INITIALIZED is in the listener's log when it returns", test_open_logs_initialized);
    CU_add_test(s, "TREE (and max_depth 2): Curator writes 500 random operations; copy = server, events valid",
                test_tree_curator_writer);
    CU_add_test(s, "TREE without data: Curator writes; paths and czxid = server, never CHANGED",
                test_tree_without_data_curator_writer);
    CU_add_test(s, "NODE: created, changed, deleted, created; delete+create same data and version: DELETED, CREATED",
                test_node_curator_writer);
    CU_add_test(s, "CHILDREN: first load, Curator writes children and below, the path deleted and created",
                test_children_curator_writer);
    CU_add_test(s, "C writes: Curator's TreeCache and the C copy both equal the server's tree",
                test_treecache_c_writer);
}

int main(void)
{
    return zkt_main("cache interop", add_suites);
}

/* Access control and arguments: the client's ACL option (creator-all
 * against other identities and unauthenticated sessions), credentials
 * confirmed at open, and every argument that can never work refused at
 * once, before anything is sent. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/harness/zkr_test.h"

#define SESSION_MS 4000

static int open_as(zkr_client_t **c, const char *hosts, const char *scheme, const char *cred,
                   zkr_acl_mode_t mode, const char *chroot)
{
    zkr_client_options_t o;
    zkr_client_options_init(&o);
    o.session_timeout_ms = SESSION_MS;
    o.connect_timeout_ms = 20000;
    o.zk_log_level = 0;
    o.auth_scheme = scheme;
    o.auth_data = cred;
    o.auth_data_len = cred ? (int)strlen(cred) : 0;
    o.acl_mode = mode;
    o.chroot = chroot;
    *c = NULL;
    return zkr_client_open(c, hosts, &o);
}

static zkr_client_t *client_as(const char *scheme, const char *cred, zkr_acl_mode_t mode)
{
    zkr_client_t *c;
    CU_ASSERT_EQUAL_FATAL(open_as(&c, zkt_hosts(), scheme, cred, mode, NULL), ZKR_OK);
    return c;
}

/* ---- creator-all ------------------------------------------------------------------- */

/* A child process with the same identity: one try while the parent holds,
 * then a real acquire once told the parent released.  Reports each code as
 * a byte (code + 64) on fd. */
static void same_identity_child(const char *path, int to_parent, int from_parent)
{
    zkr_client_t *c = NULL;
    if (open_as(&c, zkt_hosts(), "digest", "app:secret", ZKR_ACL_CREATOR_ALL, NULL) != ZKR_OK)
        _exit(3);
    zkr_mutex_t *m;
    if (zkr_mutex_new(&m, c, path) != ZKR_OK)
        _exit(4);
    char b = (char)(zkr_mutex_acquire(m, 0) + 64);
    if (write(to_parent, &b, 1) != 1)
        _exit(5);
    if (read(from_parent, &b, 1) != 1)
        _exit(6);
    b = (char)(zkr_mutex_acquire(m, 10000) + 64);
    int rel = zkr_mutex_release(m);
    if (write(to_parent, &b, 1) != 1)
        _exit(7);
    zkr_mutex_free(m);
    zkr_client_close(c);
    _exit(rel == ZKR_OK ? 0 : 8);
}

static void test_creator_all(void)
{
    char path[128], count[160];
    zkt_path("acl", path, sizeof path);
    snprintf(count, sizeof count, "%s-count", path);
    zhandle_t *raw = zkt_raw(); /* unauthenticated */
    /* The recipes create missing ancestors with their ACL too: make the
     * shared parent open first, as an administrator would. */
    zoo_create(raw, "/zkr-test", "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    zkr_client_t *ca = client_as("digest", "app:secret", ZKR_ACL_CREATOR_ALL);
    zkr_mutex_t *ma;
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&ma, ca, path), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_acquire(ma, 5000), ZKR_OK);
    char *node = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_node_path(ma, &node), ZKR_OK);

    /* The same identity in another process shares the lock normally. */
    int up[2], down[2];
    CU_ASSERT_FATAL(pipe(up) == 0 && pipe(down) == 0);
    fflush(NULL);
    pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        close(up[0]);
        close(down[1]);
        same_identity_child(path, up[1], down[0]);
    }
    close(up[1]);
    close(down[0]);
    int b = zkt_read_byte(up[0], 20000);
    CU_ASSERT_EQUAL(b - 64, ZKR_ETIMEDOUT); /* it queued, and the holder held */

    /* Another identity, and no identity, can do nothing to the lock. */
    zkr_client_t *cb = client_as("digest", "other:pw", ZKR_ACL_CREATOR_ALL);
    zkr_client_t *cw = client_as("digest", "app:wrong", ZKR_ACL_CREATOR_ALL); /* wrong password */
    zkr_client_t *cn = client_as(NULL, NULL, ZKR_ACL_OPEN);
    zkr_client_t *outsiders[3] = {cb, cw, cn};
    for (int i = 0; i < 3; i++) {
        zkr_mutex_t *mo;
        CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&mo, outsiders[i], path), ZKR_OK);
        CU_ASSERT_EQUAL(zkr_mutex_acquire(mo, 2000), ZKR_ENOAUTH); /* cannot queue */
        CU_ASSERT_EQUAL(zkr_revoke_request(outsiders[i], node), ZKR_ENOAUTH); /* cannot write */
        zkr_mutex_free(mo);
    }
    CU_ASSERT_EQUAL(zoo_delete(raw, node, -1), ZNOAUTH);
    CU_ASSERT_EQUAL(zoo_set(raw, node, "x", 1, -1), ZNOAUTH);
    CU_ASSERT_EQUAL(zoo_create(raw, "/x", "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0) == ZOK ||
                        zoo_exists(raw, "/x", 0, NULL) == ZOK,
                    1); /* (elsewhere raw can write) */
    char intruder[200];
    snprintf(intruder, sizeof intruder, "%s/_c_0-lock-", path);
    CU_ASSERT_EQUAL(zoo_create(raw, intruder, "", 0, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL_SEQUENTIAL, NULL, 0),
                    ZNOAUTH);
    /* The holder kept its lock throughout. */
    CU_ASSERT_EQUAL(zkr_mutex_hold_state(ma), ZKR_HOLD_SAFE);
    CU_ASSERT_TRUE(zkr_mutex_is_held(ma));

    /* A shared count under creator-all: only its identity may change it. */
    CU_ASSERT_EQUAL(zkr_shared_count_set(ca, count, 3), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_shared_count_set(cb, count, 1), ZKR_ENOAUTH);
    CU_ASSERT_EQUAL(zoo_set(raw, count, "\0\0\0\1", 4, -1), ZNOAUTH);
    int32_t v = 0;
    CU_ASSERT_EQUAL(zkr_shared_count_get(ca, count, &v), ZKR_OK);
    CU_ASSERT_EQUAL(v, 3);

    /* The holder lets go: the child of the same identity gets it. */
    CU_ASSERT_EQUAL(zkr_mutex_release(ma), ZKR_OK);
    char go = 'g';
    CU_ASSERT(write(down[1], &go, 1) == 1);
    b = zkt_read_byte(up[0], 20000);
    CU_ASSERT_EQUAL(b - 64, ZKR_OK);
    CU_ASSERT_EQUAL(zkt_wait_child(pid, 20000), 0);
    close(up[0]);
    close(down[1]);
    char **parts = NULL;
    size_t np = 9;
    CU_ASSERT_EQUAL(zkr_mutex_participants(ma, &parts, &np), ZKR_OK); /* raw may not even list */
    CU_ASSERT_EQUAL(np, 0);
    zkr_strings_free(parts, np);

    free(node);
    zkr_mutex_free(ma);
    for (int i = 0; i < 3; i++)
        zkr_client_close(outsiders[i]);
    zkr_client_close(ca);
    zoo_delete(raw, "/x", -1);
    zkt_raw_close(raw);
}

static void test_custom_acl(void)
{
    char path[128];
    zkt_path("acl-custom", path, sizeof path);
    /* world may read, only the digest identity may do the rest */
    zkr_acl_t entries[2] = {{ZKR_PERM_READ, "world", "anyone"},
                            {ZKR_PERM_ALL, "digest", "app:iX5ZsD6EoL0zQDQNbH+vgxDlOSQ="}};
    zkr_client_options_t o;
    zkr_client_options_init(&o);
    o.session_timeout_ms = SESSION_MS;
    o.zk_log_level = 0;
    o.acl_mode = ZKR_ACL_CUSTOM;
    o.acl = entries;
    o.acl_count = 2;
    zkr_client_t *c = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_client_open(&c, zkt_hosts(), &o), ZKR_OK);
    zhandle_t *raw = zkt_raw();
    zoo_create(raw, "/zkr-test", "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0); /* open parent */
    /* This client is not that identity: it can create the directory (with
     * the ACL) but then cannot create inside it. */
    zkr_mutex_t *m;
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&m, c, path), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_mutex_acquire(m, 2000), ZKR_ENOAUTH);
    struct ACL_vector acl = {0, NULL};
    struct Stat st;
    int zrc = zoo_get_acl(raw, path, &acl, &st);
    if (zrc != ZOK)
        printf("\n    get_acl %s: %s ", path, zerror(zrc));
    CU_ASSERT_EQUAL_FATAL(zrc, ZOK);
    CU_ASSERT_EQUAL(acl.count, 2);
    if (acl.count == 2) {
        CU_ASSERT_STRING_EQUAL(acl.data[0].id.scheme, "world");
        CU_ASSERT_EQUAL(acl.data[0].perms, ZOO_PERM_READ);
        CU_ASSERT_STRING_EQUAL(acl.data[1].id.scheme, "digest");
    }
    deallocate_ACL_vector(&acl);
    CU_ASSERT_EQUAL(zkt_count_children(raw, path), 0); /* nothing left behind */
    zkr_mutex_free(m);
    zkr_client_close(c);
    zkt_raw_close(raw);
}

/* ---- credentials ---------------------------------------------------------------------- */

static void test_bogus_scheme(void)
{
    zkr_client_t *c = (zkr_client_t *)1;
    int64_t t0 = zkt_now_ms();
    CU_ASSERT_EQUAL(open_as(&c, zkt_hosts(), "nosuchscheme", "x", ZKR_ACL_OPEN, NULL), ZKR_ENOAUTH);
    CU_ASSERT_PTR_NULL(c);
    printf("\n    refused after %lld ms ", (long long)(zkt_now_ms() - t0));
}

static void test_missing_chroot(void)
{
    char chroot[128];
    zkt_path("no-such-chroot", chroot, sizeof chroot);
    zkr_client_t *c = (zkr_client_t *)1;
    CU_ASSERT_EQUAL(open_as(&c, zkt_hosts(), NULL, NULL, ZKR_ACL_OPEN, chroot), ZKR_ENONODE);
    CU_ASSERT_PTR_NULL(c);
}

/* ---- arguments refused at once ------------------------------------------------------------ */

/* zkr_client_options_t as 0.1.0 laid it out (no size field). */
typedef struct options_0_1_0 {
    int session_timeout_ms;
    int connect_timeout_ms;
    const char *chroot;
    int allow_read_only;
    const char *auth_scheme;
    const char *auth_data;
    int auth_data_len;
    int zk_log_level;
} options_0_1_0_t;

static int open_with(zkr_client_options_t *o)
{
    zkr_client_t *c = (zkr_client_t *)1;
    o->connect_timeout_ms = -1;
    int rc = zkr_client_open(&c, "127.0.0.1:1", o);
    if (rc == ZKR_OK)
        zkr_client_close(c);
    else
        CU_ASSERT_PTR_NULL(c);
    return rc;
}

static void test_options_refused(void)
{
    zkr_client_options_t o;
    const int bad_timeouts[] = {-1, 1, 999, 600001, 1 << 30, INT_MAX};
    for (size_t i = 0; i < sizeof bad_timeouts / sizeof bad_timeouts[0]; i++) {
        zkr_client_options_init(&o);
        o.session_timeout_ms = bad_timeouts[i];
        CU_ASSERT_EQUAL(open_with(&o), ZKR_EINVAL);
    }
    const int good_timeouts[] = {0, 1000, 600000};
    for (size_t i = 0; i < sizeof good_timeouts / sizeof good_timeouts[0]; i++) {
        zkr_client_options_init(&o);
        o.session_timeout_ms = good_timeouts[i];
        CU_ASSERT_EQUAL(open_with(&o), ZKR_OK);
    }
    /* The options' size: made by another version, or by hand. */
    zkr_client_options_init(&o);
    o.size = sizeof o - 8;
    CU_ASSERT_EQUAL(open_with(&o), ZKR_EINVAL);
    zkr_client_options_init(&o);
    o.size = 0;
    CU_ASSERT_EQUAL(open_with(&o), ZKR_EINVAL);
    options_0_1_0_t old = {15000, -1, NULL, 0, NULL, NULL, 0, -1};
    zkr_client_t *c = (zkr_client_t *)1;
    CU_ASSERT_EQUAL(zkr_client_open(&c, "127.0.0.1:1", (const zkr_client_options_t *)(const void *)&old),
                    ZKR_EINVAL);
    CU_ASSERT_PTR_NULL(c);
    /* ACLs */
    zkr_client_options_init(&o);
    o.acl_mode = ZKR_ACL_CREATOR_ALL; /* no identity to be the creator */
    CU_ASSERT_EQUAL(open_with(&o), ZKR_EINVAL);
    zkr_acl_t bad1[1] = {{0, "world", "anyone"}}, bad2[1] = {{ZKR_PERM_ALL, NULL, "anyone"}},
              bad3[1] = {{64, "world", "anyone"}}, bad4[1] = {{ZKR_PERM_READ, "world", NULL}};
    const zkr_acl_t *bads[] = {bad1, bad2, bad3, bad4};
    for (int i = 0; i < 4; i++) {
        zkr_client_options_init(&o);
        o.acl_mode = ZKR_ACL_CUSTOM;
        o.acl = bads[i];
        o.acl_count = 1;
        CU_ASSERT_EQUAL(open_with(&o), ZKR_EINVAL);
    }
    zkr_client_options_init(&o);
    o.acl_mode = ZKR_ACL_CUSTOM; /* no entries */
    CU_ASSERT_EQUAL(open_with(&o), ZKR_EINVAL);
    zkr_client_options_init(&o);
    o.acl_mode = (zkr_acl_mode_t)7;
    CU_ASSERT_EQUAL(open_with(&o), ZKR_EINVAL);
    zkr_client_options_init(&o);
    o.auth_scheme = ""; /* empty scheme */
    o.auth_data = "x";
    o.auth_data_len = 1;
    CU_ASSERT_EQUAL(open_with(&o), ZKR_EINVAL);
}

static void test_hosts_refused(void)
{
    static const char *bad[] = {
        "", ",,,", "a", "a:", ":2181", "a:0", "a:65536", "a:99999", "a:21x1", "a:2181,", ",a:2181",
        "a:2181,,b:2181", "a :2181", "[::1]", "[]:1", "[::1]2181", "a:123456", "a:2181/chroot",
    };
    /* (the C client resolves names at open: only resolvable ones here) */
    static const char *good[] = {"127.0.0.1:2181", "127.0.0.1:1,127.0.0.1:65535", "localhost:2181"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        zkr_client_t *c = (zkr_client_t *)1;
        int rc = zkr_client_open(&c, bad[i], NULL);
        if (rc != ZKR_EINVAL)
            printf("\n    accepted: \"%s\" ", bad[i]);
        CU_ASSERT_EQUAL(rc, ZKR_EINVAL);
        CU_ASSERT_PTR_NULL(c);
    }
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        zkr_client_options_t o;
        zkr_client_options_init(&o);
        o.connect_timeout_ms = -1; /* nothing listens there: do not wait */
        zkr_client_t *c = NULL;
        CU_ASSERT_EQUAL(zkr_client_open(&c, good[i], &o), ZKR_OK);
        zkr_client_close(c);
    }
    /* An IPv6 literal is well-formed (whether it resolves here or not). */
    zkr_client_options_t o;
    zkr_client_options_init(&o);
    o.connect_timeout_ms = -1;
    zkr_client_t *c = NULL;
    CU_ASSERT_NOT_EQUAL(zkr_client_open(&c, "[::1]:2181", &o), ZKR_EINVAL);
    zkr_client_close(c);
}

static void test_paths_refused(void)
{
    zkr_client_t *c = zkt_client(SESSION_MS);
    static const char *bad[] = {"/a\xc2\x80", "/\xef\xbf\xbf", "/x/\xf0\x9f\x98\x80", "/\xff", "/a\x7f",
                                "/zookeeper/x", "/a//b"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        zkr_mutex_t *m = (zkr_mutex_t *)1;
        zkr_rwlock_t *l = (zkr_rwlock_t *)1;
        zkr_semaphore_t *s = (zkr_semaphore_t *)1;
        zkr_semaphore_mutex_t *sm = (zkr_semaphore_mutex_t *)1;
        CU_ASSERT_EQUAL(zkr_mutex_new(&m, c, bad[i]), ZKR_EINVAL);
        CU_ASSERT_EQUAL(zkr_rwlock_new(&l, c, bad[i]), ZKR_EINVAL);
        CU_ASSERT_EQUAL(zkr_semaphore_new(&s, c, bad[i], 2), ZKR_EINVAL);
        CU_ASSERT_EQUAL(zkr_semaphore_mutex_new(&sm, c, bad[i]), ZKR_EINVAL);
        CU_ASSERT_PTR_NULL(m);
        CU_ASSERT_PTR_NULL(l);
        CU_ASSERT_PTR_NULL(s);
        CU_ASSERT_PTR_NULL(sm);
        CU_ASSERT_EQUAL(zkr_shared_count_set(c, bad[i], 1), ZKR_EINVAL);
    }
    /* Accepted non-ASCII: the server takes it. */
    char path[128];
    zkt_path("\xc3\xbc\xe2\x82\xac", path, sizeof path);
    zkr_mutex_t *m;
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&m, c, path), ZKR_OK);
    int rc = zkr_mutex_acquire(m, 5000);
    if (rc != ZKR_OK)
        printf("\n    %s: %s ", path, zkr_err_name(rc));
    CU_ASSERT_EQUAL(rc, ZKR_OK);
    CU_ASSERT_EQUAL(zkr_mutex_release(m), ZKR_OK);
    zkr_mutex_free(m);
    zkr_client_close(c);
}

static void test_never_satisfiable(void)
{
    char path[128], count[160];
    zkt_path("never", path, sizeof path);
    snprintf(count, sizeof count, "%s-count", path);
    zhandle_t *raw = zkt_raw();
    zkr_client_t *c = zkt_client(SESSION_MS);
    CU_ASSERT_EQUAL(zkr_shared_count_set(c, count, 0), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_shared_count_set(c, count, -5), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zoo_exists(raw, count, 0, NULL), ZNONODE); /* nothing sent */

    zkr_semaphore_t *s;
    CU_ASSERT_EQUAL_FATAL(zkr_semaphore_new(&s, c, path, 2), ZKR_OK);
    zkr_lease_t *leases[3];
    int64_t t0 = zkt_now_ms();
    CU_ASSERT_EQUAL(zkr_semaphore_acquire_n(s, 3, 10000, leases), ZKR_ENEVER);
    CU_ASSERT_TRUE(zkt_now_ms() - t0 < 1000);
    CU_ASSERT_EQUAL(zoo_exists(raw, path, 0, NULL), ZNONODE); /* nothing sent */
    int rc = zkr_semaphore_acquire_n(s, 2, 5000, leases);
    if (rc != ZKR_OK)
        printf("\n    acquire_n 2: %s ", zkr_err_name(rc));
    CU_ASSERT_EQUAL(rc, ZKR_OK);
    CU_ASSERT_EQUAL(zkr_lease_release_all(leases, 2), ZKR_OK);

    zkr_mutex_t *m;
    zkr_rwlock_t *rw;
    zkr_semaphore_mutex_t *sm;
    CU_ASSERT_EQUAL_FATAL(zkr_mutex_new(&m, c, path), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_rwlock_new(&rw, c, path), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_semaphore_mutex_new(&sm, c, path), ZKR_OK);
    zkr_multilock_t *ml = (zkr_multilock_t *)1;
    zkr_lock_ref_t twice[2] = {zkr_mutex_ref(m), zkr_mutex_ref(m)};
    CU_ASSERT_EQUAL(zkr_multilock_new(&ml, twice, 2), ZKR_EINVAL);
    CU_ASSERT_PTR_NULL(ml);
    zkr_lock_ref_t twice_s[3] = {zkr_semaphore_mutex_ref(sm), zkr_mutex_ref(m), zkr_semaphore_mutex_ref(sm)};
    CU_ASSERT_EQUAL(zkr_multilock_new(&ml, twice_s, 3), ZKR_EINVAL);
    zkr_lock_ref_t upgrade[2] = {zkr_rwlock_read_ref(rw), zkr_rwlock_write_ref(rw)};
    CU_ASSERT_EQUAL(zkr_multilock_new(&ml, upgrade, 2), ZKR_ENEVER);
    zkr_lock_ref_t downgrade[2] = {zkr_rwlock_write_ref(rw), zkr_rwlock_read_ref(rw)};
    CU_ASSERT_EQUAL(zkr_multilock_new(&ml, downgrade, 2), ZKR_OK);
    zkr_multilock_free(ml);

    zkr_mutex_free(m);
    zkr_rwlock_free(rw);
    zkr_semaphore_mutex_free(sm);
    zkr_semaphore_free(s);
    zkr_client_close(c);
    zkt_raw_close(raw);
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("access", NULL, NULL);
    CU_add_test(s, "creator-all: one identity shares, others and none cannot touch", test_creator_all);
    CU_add_test(s, "a custom ACL on the nodes the recipes create", test_custom_acl);
    CU_add_test(s, "an unknown auth scheme: open returns ZKR_ENOAUTH", test_bogus_scheme);
    CU_add_test(s, "a missing chroot: open returns ZKR_ENONODE", test_missing_chroot);
    s = CU_add_suite("arguments", NULL, NULL);
    CU_add_test(s, "options: timeouts, size, ACLs refused at open", test_options_refused);
    CU_add_test(s, "host strings refused at open", test_hosts_refused);
    CU_add_test(s, "paths ZooKeeper would refuse are refused at *_new", test_paths_refused);
    CU_add_test(s, "requests that can never be granted are refused at once", test_never_satisfiable);
}

int main(void)
{
    return zkt_main("test_access", add_suites);
}

/* Unit tests of the core's pure parts, without a server: the connection
 * state machine's transitions, the drivers' decisions on sorted children,
 * the error table and the ZooKeeper classifier. */
#include <CUnit/Basic.h>
#include <stdlib.h>
#include <string.h>

#include "session/core_private.h"
#include "engine/engine.h"

/* ---- the state machine -------------------------------------------------------- */

static zkr__sm_effect_t step(zkr__sm_t *sm, int zs)
{
    return zkr__sm_step(sm, zs);
}

static void test_sm_first_connection(void)
{
    zkr__sm_t sm = {ZKR_STATE_LATENT, 0, 0};
    zkr__sm_effect_t e = step(&sm, ZOO_CONNECTING_STATE);
    CU_ASSERT_EQUAL(e.report, ZKR_STATE_LATENT); /* nothing before the first connection */
    CU_ASSERT_FALSE(e.arm_lost_timer);
    e = step(&sm, ZOO_CONNECTED_STATE);
    CU_ASSERT_EQUAL(e.report, ZKR_STATE_CONNECTED);
    CU_ASSERT_TRUE(e.session_up);
    CU_ASSERT_TRUE(sm.connected);
    e = step(&sm, ZOO_CONNECTED_STATE);
    CU_ASSERT_EQUAL(e.report, ZKR_STATE_LATENT); /* no duplicate */
}

static void test_sm_suspend_reconnect_lost(void)
{
    zkr__sm_t sm = {ZKR_STATE_LATENT, 0, 0};
    step(&sm, ZOO_CONNECTED_STATE);
    zkr__sm_effect_t e = step(&sm, ZOO_CONNECTING_STATE);
    CU_ASSERT_EQUAL(e.report, ZKR_STATE_SUSPENDED);
    CU_ASSERT_TRUE(e.arm_lost_timer);
    CU_ASSERT_FALSE(sm.connected);
    e = step(&sm, ZOO_ASSOCIATING_STATE);
    CU_ASSERT_EQUAL(e.report, ZKR_STATE_LATENT);
    CU_ASSERT_FALSE(e.arm_lost_timer); /* the timer runs from the first SUSPENDED */
    e = step(&sm, ZOO_CONNECTED_STATE);
    CU_ASSERT_EQUAL(e.report, ZKR_STATE_RECONNECTED);
    CU_ASSERT_TRUE(e.clear_lost_timer);
    step(&sm, ZOO_CONNECTING_STATE);
    e = zkr__sm_lost_timer(&sm);
    CU_ASSERT_EQUAL(e.report, ZKR_STATE_LOST);
    CU_ASSERT_TRUE(e.rebuild);
    e = zkr__sm_lost_timer(&sm);
    CU_ASSERT_EQUAL(e.report, ZKR_STATE_LATENT); /* only while SUSPENDED */
    CU_ASSERT_FALSE(e.rebuild);
    e = step(&sm, ZOO_EXPIRED_SESSION_STATE); /* the server says so later */
    CU_ASSERT_EQUAL(e.report, ZKR_STATE_LATENT);
    CU_ASSERT_TRUE(e.rebuild);
    e = step(&sm, ZOO_CONNECTED_STATE); /* the new session */
    CU_ASSERT_EQUAL(e.report, ZKR_STATE_RECONNECTED);
}

static void test_sm_expiry_and_auth(void)
{
    zkr__sm_t sm = {ZKR_STATE_LATENT, 0, 0};
    zkr__sm_effect_t e = step(&sm, ZOO_AUTH_FAILED_STATE);
    CU_ASSERT_TRUE(e.auth_failed);
    CU_ASSERT_EQUAL(e.report, ZKR_STATE_LATENT); /* open reports it, not a listener */
    sm = (zkr__sm_t){ZKR_STATE_LATENT, 0, 0};
    step(&sm, ZOO_CONNECTED_STATE);
    e = step(&sm, ZOO_EXPIRED_SESSION_STATE);
    CU_ASSERT_EQUAL(e.report, ZKR_STATE_LOST);
    CU_ASSERT_TRUE(e.rebuild);
    CU_ASSERT_TRUE(e.clear_lost_timer);
    e = step(&sm, ZOO_AUTH_FAILED_STATE);
    CU_ASSERT_EQUAL(e.report, ZKR_STATE_LATENT); /* LOST already */
    CU_ASSERT_TRUE(e.auth_failed);
}

static void test_sm_read_only(void)
{
    zkr__sm_t sm = {ZKR_STATE_LATENT, 0, 0};
    zkr__sm_effect_t e = step(&sm, ZOO_READONLY_STATE);
    CU_ASSERT_EQUAL(e.report, ZKR_STATE_READ_ONLY);
    CU_ASSERT_TRUE(sm.ever_connected);
    e = step(&sm, ZOO_CONNECTED_STATE);
    CU_ASSERT_EQUAL(e.report, ZKR_STATE_RECONNECTED);
    e = step(&sm, ZOO_READONLY_STATE);
    CU_ASSERT_EQUAL(e.report, ZKR_STATE_READ_ONLY);
    e = step(&sm, ZOO_CONNECTING_STATE);
    CU_ASSERT_EQUAL(e.report, ZKR_STATE_SUSPENDED);
    e = step(&sm, 12345); /* an unknown raw state changes nothing */
    CU_ASSERT_EQUAL(e.report, ZKR_STATE_LATENT);
    CU_ASSERT_EQUAL(sm.state, ZKR_STATE_SUSPENDED);
}

/* ---- drivers -------------------------------------------------------------------- */

/* Sort `names` with the driver's key and ask it about `ours`. */
static int decide(const zkr__driver_t *d, const char **names, size_t n, const char *ours, size_t *watch_out,
                  const char **watched)
{
    char **v = calloc(n, sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = strdup(names[i]);
    CU_ASSERT_EQUAL_FATAL(zkr__sort_children(v, n, d->key, d->key_marker), 0);
    size_t me = n;
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i], ours) == 0)
            me = i;
    CU_ASSERT_FATAL(me < n);
    size_t w = n;
    int r = d->decide(d->decide_arg, v, n, me, &w);
    *watch_out = w;
    static char last[128];
    last[0] = '\0';
    if (r == 0 && w < n)
        snprintf(last, sizeof last, "%s", v[w]);
    *watched = last;
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
    return r;
}

static void test_lock_driver(void)
{
    const char *kids[] = {"_c_b-lock-0000000002", "_c_a-lock-0000000001", "_c_c-lock-0000000003"};
    size_t w;
    const char *watched;
    CU_ASSERT_EQUAL(decide(&zkr__lock_driver, kids, 3, "_c_a-lock-0000000001", &w, &watched), 1);
    CU_ASSERT_EQUAL(decide(&zkr__lock_driver, kids, 3, "_c_c-lock-0000000003", &w, &watched), 0);
    CU_ASSERT_STRING_EQUAL(watched, "_c_b-lock-0000000002"); /* its predecessor only */
    /* A name without the marker sorts by its whole name (Curator's rule). */
    const char *odd[] = {"_c_x-lock-0000000005", "zzz", "_c_y-lock-0000000004"};
    CU_ASSERT_EQUAL(decide(&zkr__lock_driver, odd, 3, "_c_y-lock-0000000004", &w, &watched), 1);
    CU_ASSERT_EQUAL(decide(&zkr__lock_driver, odd, 3, "_c_x-lock-0000000005", &w, &watched), 0);
    CU_ASSERT_STRING_EQUAL(watched, "_c_y-lock-0000000004");
    int three = 3;
    CU_ASSERT_EQUAL(zkr__decide_first_n(&three, NULL, 5, 2, &w), 1);
    CU_ASSERT_EQUAL(zkr__decide_first_n(&three, NULL, 5, 4, &w), 0);
    CU_ASSERT_EQUAL(w, 1); /* the node `max` places before ours */
}

static void test_rw_drivers(void)
{
    const char *kids[] = {"_c_1-__READ__0000000001", "_c_2-__WRIT__0000000002", "_c_3-__READ__0000000003",
                          "_c_4-__READ__0000000004", "_c_5-__WRIT__0000000005"};
    size_t w;
    const char *watched;
    CU_ASSERT_EQUAL(decide(&zkr__read_driver, kids, 5, "_c_1-__READ__0000000001", &w, &watched), 1);
    /* Readers behind a writer watch the first writer (Curator's choice). */
    CU_ASSERT_EQUAL(decide(&zkr__read_driver, kids, 5, "_c_4-__READ__0000000004", &w, &watched), 0);
    CU_ASSERT_STRING_EQUAL(watched, "_c_2-__WRIT__0000000002");
    /* A writer watches its immediate predecessor, of any kind. */
    CU_ASSERT_EQUAL(decide(&zkr__write_driver, kids, 5, "_c_5-__WRIT__0000000005", &w, &watched), 0);
    CU_ASSERT_STRING_EQUAL(watched, "_c_4-__READ__0000000004");
    CU_ASSERT_EQUAL(decide(&zkr__write_driver, kids, 5, "_c_2-__WRIT__0000000002", &w, &watched), 0);
    CU_ASSERT_STRING_EQUAL(watched, "_c_1-__READ__0000000001");
    /* A downgrade read node carries the writer's sequence: same place. */
    const char *down[] = {"_c_9-__READ__0000000007", "_c_8-__WRIT__0000000008", "_c_7-__READ__0000000009"};
    CU_ASSERT_EQUAL(decide(&zkr__read_driver, down, 3, "_c_9-__READ__0000000007", &w, &watched), 1);
    CU_ASSERT_EQUAL(decide(&zkr__read_driver, down, 3, "_c_7-__READ__0000000009", &w, &watched), 0);
    CU_ASSERT_STRING_EQUAL(watched, "_c_8-__WRIT__0000000008");
}

/* ---- errors ----------------------------------------------------------------------- */

static void test_error_table(void)
{
    const char *seen[32] = {0};
    int n = 0;
    for (int e = 0; e >= ZKR_ENEVER; e--) {
        const char *name = zkr_err_name(e), *msg = zkr_strerror(e);
        CU_ASSERT_STRING_NOT_EQUAL(name, "ZKR_E?");
        CU_ASSERT_STRING_NOT_EQUAL(msg, "unknown error");
        CU_ASSERT_EQUAL(strncmp(name, "ZKR_", 4), 0);
        for (int i = 0; i < n; i++)
            CU_ASSERT_STRING_NOT_EQUAL(seen[i], name);
        seen[n++] = name;
    }
    CU_ASSERT_STRING_EQUAL(zkr_err_name(ZKR_ETIMEDOUT), "ZKR_ETIMEDOUT");
    CU_ASSERT_EQUAL(ZKR_ENEVER, -24); /* the values are ABI: appended, never moved */
    CU_ASSERT_STRING_EQUAL(zkr_err_name(ZKR_ENOTFOUND), "ZKR_ENOTFOUND");
    CU_ASSERT_STRING_EQUAL(zkr_err_name(-25), "ZKR_E?");
    CU_ASSERT_STRING_EQUAL(zkr_strerror(42), "unknown error");
}

static void test_zk_classifier(void)
{
    CU_ASSERT_EQUAL(zkr__zk_class(ZOK), ZKR__ZC_OK);
    CU_ASSERT_EQUAL(zkr__zk_class(ZCONNECTIONLOSS), ZKR__ZC_CONNECTION);
    CU_ASSERT_EQUAL(zkr__zk_class(ZOPERATIONTIMEOUT), ZKR__ZC_CONNECTION);
    CU_ASSERT_EQUAL(zkr__zk_class(ZRUNTIMEINCONSISTENCY), ZKR__ZC_CONNECTION);
    CU_ASSERT_EQUAL(zkr__zk_class(ZSESSIONEXPIRED), ZKR__ZC_SESSION);
    CU_ASSERT_EQUAL(zkr__zk_class(ZSESSIONMOVED), ZKR__ZC_SESSION);
    CU_ASSERT_EQUAL(zkr__zk_class(ZCLOSING), ZKR__ZC_SESSION);
    CU_ASSERT_EQUAL(zkr__zk_class(ZNOAUTH), ZKR__ZC_FINAL);
    CU_ASSERT_EQUAL(zkr__zk_class(ZNONODE), ZKR__ZC_FINAL);
    CU_ASSERT_EQUAL(zkr__zk_error(ZCONNECTIONLOSS), ZKR_ECONNLOSS);
    CU_ASSERT_EQUAL(zkr__zk_error(ZSESSIONEXPIRED), ZKR_ESESSIONLOST);
    CU_ASSERT_EQUAL(zkr__zk_error(ZCLOSING), ZKR_ECLOSED);
    CU_ASSERT_EQUAL(zkr__zk_error(ZNOAUTH), ZKR_ENOAUTH);
    CU_ASSERT_EQUAL(zkr__zk_error(ZNONODE), ZKR_ENONODE);
    CU_ASSERT_EQUAL(zkr__zk_error(ZNOTEMPTY), ZKR_EZOOKEEPER);
}

int main(void)
{
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    CU_pSuite s = CU_add_suite("state machine", NULL, NULL);
    CU_add_test(s, "first connection, no duplicates", test_sm_first_connection);
    CU_add_test(s, "SUSPENDED, RECONNECTED, LOST by timer, rebuild", test_sm_suspend_reconnect_lost);
    CU_add_test(s, "expiry and auth failure", test_sm_expiry_and_auth);
    CU_add_test(s, "read-only", test_sm_read_only);
    s = CU_add_suite("drivers", NULL, NULL);
    CU_add_test(s, "mutex: first holds, watch the predecessor", test_lock_driver);
    CU_add_test(s, "read/write: one axis, readers watch the first writer", test_rw_drivers);
    s = CU_add_suite("errors", NULL, NULL);
    CU_add_test(s, "one table: every code named and described", test_error_table);
    CU_add_test(s, "ZooKeeper codes classified and mapped", test_zk_classifier);
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    /* a suite whose init fails runs none of its tests: count it too */
    int failed = (int)(CU_get_number_of_tests_failed() + CU_get_number_of_suites_failed());
    CU_cleanup_registry();
    return failed ? 1 : 0;
}

/* Barriers against Apache Curator 5.4 (Debian's jars): the Java side is
 * tests/interop/BarrierPeer.java, driven over a pipe.
 *
 *  - C and Java members (each on its own session) enter and leave one
 *    double barrier together, several rounds, the last to enter and the
 *    last to leave alternating between C and Java: until the last comes,
 *    every other is still waiting (on both sides); then all return.
 *    Curator's member nodes and ours are alike (36-character UUIDs), and
 *    its "ready" node is made and deleted by either side.
 *  - A Java DistributedBarrier set and removed while C waits, and the
 *    other way round; both make the node PERSISTENT.
 *  - What each side does on a stale "ready" node: Curator lets a single
 *    member through (its known fault), ours waits for the count.
 *  - A C member's session expires inside: Curator's leave counts it as
 *    left; ours says ZKR_ESESSIONLOST.
 *
 * Every wait is bounded; no test asserts a speed. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/barrier_calls.h"
#include "tests/harness/zkr_test.h"
#include "tests/interop/jpeer.h"

#define SESSION_MS 10000
#define WAIT_MS 30000
#define QUIET_MS 400 /* how long "still waiting" is watched */

static int suite_init(void)
{
    jpeer_java = jpeer_start("BarrierPeer");
    return jpeer_java ? 0 : 1;
}

static int suite_clean(void)
{
    jpeer_stop(jpeer_java);
    jpeer_java = NULL;
    return 0;
}

#define C_MEMBERS 2
#define J_MEMBERS 2
#define ROUNDS 4

/* Every member of the round but the last starts (C: a thread; Java: its
 * thread); none returns while the last has not come; the last comes; all
 * return.  The last is C in even rounds, Java in odd ones. */
static void step(zkr_double_barrier_t **d, int leave, int round)
{
    const char *what = leave ? "leave" : "enter";
    int java_last = round % 2;
    bc_kind_t kind = leave ? BC_LEAVE : BC_ENTER;
    bcall_t k[C_MEMBERS];
    for (int i = 0; i < C_MEMBERS; i++)
        if (java_last || i > 0)
            bc_start(&k[i], kind, d[i], NULL, WAIT_MS);
    for (int j = 0; j < J_MEMBERS; j++)
        if (!java_last || j > 0)
            CU_ASSERT_TRUE(jis("STARTED", "%s j%d %d", what, j, WAIT_MS));
    zkt_sleep_ms(QUIET_MS);
    /* nobody is through yet */
    for (int i = 0; i < C_MEMBERS; i++)
        if (java_last || i > 0)
            CU_ASSERT_EQUAL(k[i].rc, BC_PENDING);
    for (int j = 0; j < J_MEMBERS; j++)
        if (!java_last || j > 0)
            CU_ASSERT_TRUE(jis("PENDING", "await j%d 0", j));
    /* the last comes: everyone is through */
    int64_t last = zkt_now_ms();
    if (java_last) {
        CU_ASSERT_TRUE(jis("STARTED", "%s j0 %d", what, WAIT_MS));
    } else {
        bc_run(&k[0], kind, d[0], NULL, WAIT_MS);
    }
    for (int i = 0; i < C_MEMBERS; i++) {
        if (java_last || i > 0) {
            bc_join(&k[i]);
            CU_ASSERT(k[i].returned >= last);
        }
        if (k[i].rc != ZKR_OK)
            printf("\n    round %d: C member %d %s: %s", round, i, what, zkr_err_name(k[i].rc));
        CU_ASSERT_EQUAL(k[i].rc, ZKR_OK);
    }
    for (int j = 0; j < J_MEMBERS; j++)
        CU_ASSERT_TRUE(jis("DONE true", "await j%d %d", j, WAIT_MS));
}

static void test_mixed_rounds(void)
{
    char path[128];
    zkt_path("mixed", path, sizeof path);
    const size_t n = C_MEMBERS + J_MEMBERS;
    zkr_client_t *c[C_MEMBERS];
    zkr_double_barrier_t *d[C_MEMBERS];
    for (int i = 0; i < C_MEMBERS; i++) {
        c[i] = zkt_client(SESSION_MS);
        CU_ASSERT_EQUAL_FATAL(zkr_double_barrier_new(&d[i], c[i], path, n), ZKR_OK);
    }
    for (int j = 0; j < J_MEMBERS; j++)
        CU_ASSERT_TRUE_FATAL(jis("OK", "member j%d %s %zu", j, path, n));
    zhandle_t *zh = zkt_raw();
    for (int r = 0; r < ROUNDS; r++) {
        step(d, 0, r);
        /* inside: the members' nodes, alike on both sides, and "ready" */
        struct String_vector sv;
        CU_ASSERT_EQUAL_FATAL(zoo_get_children(zh, path, 0, &sv), ZOK);
        CU_ASSERT_EQUAL(sv.count, (int)n + 1);
        int ready = 0;
        for (int i = 0; i < sv.count; i++) {
            char child[256];
            struct Stat st;
            snprintf(child, sizeof child, "%s/%s", path, sv.data[i]);
            CU_ASSERT_EQUAL_FATAL(zoo_exists(zh, child, 0, &st), ZOK);
            if (strcmp(sv.data[i], "ready") == 0) {
                ready++;
                CU_ASSERT_EQUAL(st.ephemeralOwner, 0); /* PERSISTENT */
            } else {
                CU_ASSERT_EQUAL(strlen(sv.data[i]), 36); /* a UUID */
                CU_ASSERT(st.ephemeralOwner != 0);      /* EPHEMERAL */
            }
        }
        CU_ASSERT_EQUAL(ready, 1);
        deallocate_String_vector(&sv);
        step(d, 1, r);
        CU_ASSERT_EQUAL(zkt_count_children(zh, path), 0);
    }
    zkt_raw_close(zh);
    for (int i = 0; i < C_MEMBERS; i++) {
        zkr_double_barrier_free(d[i]);
        zkr_client_close(c[i]);
    }
}

/* ---- DistributedBarrier ------------------------------------------------------------------ */

static void test_barrier_both_ways(void)
{
    char path[128], gate[160];
    zkt_path("gate", path, sizeof path);
    snprintf(gate, sizeof gate, "%s/a/b", path);
    zkr_client_t *c = zkt_client(SESSION_MS);
    zkr_barrier_t *b = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_barrier_new(&b, c, gate), ZKR_OK);
    /* Java sets (parents made), C waits, Java removes */
    CU_ASSERT_TRUE_FATAL(jis("OK", "set %s", gate));
    CU_ASSERT_EQUAL(zkr_barrier_wait(b, 300), ZKR_ETIMEDOUT);
    bcall_t w;
    bc_start(&w, BC_WAIT, NULL, b, WAIT_MS);
    zkt_sleep_ms(QUIET_MS);
    CU_ASSERT_EQUAL(w.rc, BC_PENDING);
    int64_t removed = zkt_now_ms();
    CU_ASSERT_TRUE(jis("OK", "remove %s", gate));
    CU_ASSERT_EQUAL(bc_join(&w), ZKR_OK);
    CU_ASSERT(w.returned >= removed);
    /* C sets: persistent and empty; Java waits, C removes */
    CU_ASSERT_EQUAL(zkr_barrier_set(b, 5000), ZKR_OK);
    CU_ASSERT_TRUE(jis("0 0", "stat %s", gate));
    CU_ASSERT_TRUE(jis("STARTED", "wait %s %d", gate, WAIT_MS));
    zkt_sleep_ms(QUIET_MS);
    CU_ASSERT_TRUE(jis("PENDING", "awaitwait %s 0", gate));
    CU_ASSERT_EQUAL(zkr_barrier_remove(b, 5000), ZKR_OK);
    CU_ASSERT_TRUE(jis("DONE true", "awaitwait %s %d", gate, WAIT_MS));
    /* a Java wait that times out while C has it set */
    CU_ASSERT_EQUAL(zkr_barrier_set(b, 5000), ZKR_OK);
    CU_ASSERT_TRUE(jis("STARTED", "wait %s 300", gate));
    CU_ASSERT_TRUE(jis("DONE false", "awaitwait %s %d", gate, WAIT_MS));
    CU_ASSERT_EQUAL(zkr_barrier_remove(b, 5000), ZKR_OK);
    zkr_barrier_free(b);
    zkr_client_close(c);
}

/* A stale "ready" (left by a round whose members died): Curator lets a
 * lone member through on it; ours waits for the count, and both meet
 * when the second comes. */
static void test_stale_ready_each_side(void)
{
    char path[128], ready[160];
    zkt_path("stale", path, sizeof path);
    snprintf(ready, sizeof ready, "%s/ready", path);
    zhandle_t *zh = zkt_raw();
    bc_stale_ready(zh, path);
    /* Curator, alone, with 2 wanted: through at once */
    CU_ASSERT_TRUE_FATAL(jis("OK", "member s0 %s 2", path));
    CU_ASSERT_TRUE(jis("STARTED", "enter s0 %d", WAIT_MS));
    CU_ASSERT_TRUE(jis("DONE true", "await s0 %d", WAIT_MS));
    CU_ASSERT_TRUE(jis("STARTED", "leave s0 %d", WAIT_MS));
    CU_ASSERT_TRUE(jis("DONE true", "await s0 %d", WAIT_MS));
    /* its leave deleted "ready": make it stale again */
    CU_ASSERT_EQUAL_FATAL(zoo_create(zh, ready, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
    /* ours, alone: not through */
    zkr_client_t *c = zkt_client(SESSION_MS);
    zkr_double_barrier_t *d = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_double_barrier_new(&d, c, path, 2), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_double_barrier_enter(d, 600), ZKR_ETIMEDOUT);
    /* ours waits; a Java member comes: Curator passes on the stale
     * "ready" as it enters, ours counts two members after it and goes */
    bcall_t k;
    bc_start(&k, BC_ENTER, d, NULL, WAIT_MS);
    zkt_sleep_ms(QUIET_MS);
    CU_ASSERT_EQUAL(k.rc, BC_PENDING);
    int64_t second = zkt_now_ms();
    CU_ASSERT_TRUE(jis("STARTED", "enter s0 %d", WAIT_MS));
    CU_ASSERT_EQUAL(bc_join(&k), ZKR_OK);
    CU_ASSERT(k.returned >= second);
    CU_ASSERT_TRUE(jis("DONE true", "await s0 %d", WAIT_MS));
    /* both leave together */
    CU_ASSERT_TRUE(jis("STARTED", "leave s0 %d", WAIT_MS));
    CU_ASSERT_EQUAL(zkr_double_barrier_leave(d, WAIT_MS), ZKR_OK);
    CU_ASSERT_TRUE(jis("DONE true", "await s0 %d", WAIT_MS));
    CU_ASSERT_EQUAL(zkt_count_children(zh, path), 0);
    zkr_double_barrier_free(d);
    zkr_client_close(c);
    zkt_raw_close(zh);
}

/* A C member's session expires inside: the Java member's leave counts it
 * as left (Curator sees its node go); the C member's leave says its
 * session was lost. */
static void test_expiry_inside(void)
{
    char path[128];
    zkt_path("expiry", path, sizeof path);
    zkr_client_t *c = zkt_client(SESSION_MS);
    zkr_double_barrier_t *d = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_double_barrier_new(&d, c, path, 2), ZKR_OK);
    CU_ASSERT_TRUE_FATAL(jis("OK", "member e0 %s 2", path));
    bcall_t k;
    bc_start(&k, BC_ENTER, d, NULL, WAIT_MS);
    CU_ASSERT_TRUE(jis("STARTED", "enter e0 %d", WAIT_MS));
    CU_ASSERT_EQUAL(bc_join(&k), ZKR_OK);
    CU_ASSERT_TRUE(jis("DONE true", "await e0 %d", WAIT_MS));
    zkt_expire_client(c, SESSION_MS);
    CU_ASSERT_TRUE(jis("STARTED", "leave e0 %d", WAIT_MS));
    CU_ASSERT_TRUE(jis("DONE true", "await e0 %d", WAIT_MS));
    CU_ASSERT_EQUAL(zkr_double_barrier_leave(d, WAIT_MS), ZKR_ESESSIONLOST);
    CU_ASSERT_EQUAL(zkr_double_barrier_is_inside(d), 0);
    zhandle_t *zh = zkt_raw();
    CU_ASSERT_EQUAL(zkt_count_children(zh, path), 0);
    zkt_raw_close(zh);
    zkr_double_barrier_free(d);
    zkr_client_close(c);
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("barrier interop", suite_init, suite_clean);
    CU_add_test(s, "C and Java members in one double barrier, rounds, the last alternating: none through early",
                test_mixed_rounds);
    CU_add_test(s, "DistributedBarrier: Java sets and removes while C waits, and the other way round",
                test_barrier_both_ways);
    CU_add_test(s, "a stale \"ready\": Curator lets one member through, ours waits for the count",
                test_stale_ready_each_side);
    CU_add_test(s, "a C member's session expires inside: the Java member's leave counts it as left",
                test_expiry_inside);
}

int main(void)
{
    return zkt_main("test_barrier_interop", add_suites);
}

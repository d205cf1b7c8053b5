/* Helpers of the barrier suites (tests/barrier_calls.h). */
#include <stdio.h>
#include <string.h>

#include "tests/barrier_calls.h"
#include "tests/harness/zkr_test.h"

static void *bc_main(void *arg)
{
    bcall_t *k = arg;
    switch (k->kind) {
    case BC_ENTER: k->rc = zkr_double_barrier_enter(k->d, k->timeout); break;
    case BC_LEAVE: k->rc = zkr_double_barrier_leave(k->d, k->timeout); break;
    case BC_WAIT: k->rc = zkr_barrier_wait(k->b, k->timeout); break;
    }
    k->returned = zkt_now_ms();
    return NULL;
}

static void bc_fill(bcall_t *k, bc_kind_t kind, zkr_double_barrier_t *d, zkr_barrier_t *b, int64_t timeout)
{
    memset(k, 0, sizeof *k);
    k->kind = kind;
    k->d = d;
    k->b = b;
    k->timeout = timeout;
    k->rc = BC_PENDING;
}

void bc_run(bcall_t *k, bc_kind_t kind, zkr_double_barrier_t *d, zkr_barrier_t *b, int64_t timeout)
{
    bc_fill(k, kind, d, b, timeout);
    bc_main(k);
}

void bc_start(bcall_t *k, bc_kind_t kind, zkr_double_barrier_t *d, zkr_barrier_t *b, int64_t timeout)
{
    bc_fill(k, kind, d, b, timeout);
    CU_ASSERT_FATAL(pthread_create(&k->t, NULL, bc_main, k) == 0);
}

int bc_join(bcall_t *k)
{
    pthread_join(k->t, NULL);
    return k->rc;
}

int64_t bc_stale_ready(zhandle_t *zh, const char *path)
{
    char ready[512];
    snprintf(ready, sizeof ready, "%s/ready", path);
    CU_ASSERT_EQUAL_FATAL(zoo_create(zh, path, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
    CU_ASSERT_EQUAL_FATAL(zoo_create(zh, ready, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
    struct Stat st;
    CU_ASSERT_EQUAL_FATAL(zoo_exists(zh, ready, 0, &st), ZOK);
    return st.czxid;
}

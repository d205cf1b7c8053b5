/* The counters' writes (recipes/vwrite.h): a versioned write sent again,
 * unchanged, after a lost answer (at most one copy can succeed), and its
 * refusal settled by one read; a read that outlasts a lost connection;
 * the retry policies (zkr/counter.h). */
#include "config.h"

#include <stddef.h>
#include <string.h>
#include <time.h>

#include "recipes/vwrite.h"

#define LOST_PAUSE_MS 10 /* between two sends after a lost connection */

/* A lost connection, or a session that ended under the request: the
 * request may or may not have been applied; another may be sent. */
static int lost(int zrc)
{
    return zrc == ZCONNECTIONLOSS || zrc == ZRUNTIMEINCONSISTENCY || zrc == ZSESSIONEXPIRED ||
           zrc == ZSESSIONMOVED || zrc == ZINVALIDSTATE;
}

int zkr__vread(zkr_client_t *c, const char *path, zkr__rq_t *rq, int64_t deadline)
{
    for (;;) {
        memset(rq, 0, offsetof(zkr__rq_t, stat));
        rq->type = ZKR__RQ_GET;
        rq->path = path;
        int zrc = zkr__request(c, rq, deadline);
        /* ZOPERATIONTIMEOUT before the deadline: the C client gave the
         * connection up (what was in flight is answered so) */
        if (!lost(zrc) && !(zrc == ZOPERATIONTIMEOUT && zkr__remaining_ms(deadline) > 0))
            return zrc;
        if (zkr__remaining_ms(deadline) <= LOST_PAUSE_MS)
            return ZOPERATIONTIMEOUT;
        zkr__sleep_ms(LOST_PAUSE_MS);
    }
}

/* A resent write was refused (bad version, node exists, no node): was the
 * first copy applied?  Ours would have left version `made` with our
 * data, on the node we read (czxid). */
static zkr__vw_outcome_t settle(zkr_client_t *c, const zkr__vw_t *w, int64_t deadline)
{
    zkr__rq_t rq;
    memset(&rq, 0, sizeof rq);
    int zrc = zkr__vread(c, w->path, &rq, deadline);
    zkr__vw_outcome_t out = ZKR__VW_UNKNOWN;
    int made = w->create ? 0 : w->version + 1;
    if (zrc == ZOK && (w->create || rq.stat.czxid == w->czxid) && rq.stat.version == made) {
        int same = rq.value_len == w->len && (w->len == 0 || memcmp(rq.value, w->data, (size_t)w->len) == 0);
        if (!same)
            out = ZKR__VW_RACE; /* the write that made `made` was another's */
    }
    zkr__rq_clear(&rq);
    return out;
}

int zkr__vwrite(zkr_client_t *c, const zkr__vw_t *w, int64_t deadline, zkr__vw_outcome_t *outcome,
                struct Stat *st)
{
    int was_lost = 0;
    for (;;) {
        zkr__rq_t rq;
        memset(&rq, 0, sizeof rq);
        rq.path = w->path;
        rq.data = w->data;
        rq.data_len = w->len;
        if (w->create) {
            rq.type = ZKR__RQ_CREATE;
            rq.mode = ZOO_PERSISTENT;
            rq.parents = 1;
        } else {
            rq.type = ZKR__RQ_SET;
            rq.version = w->version;
        }
        int zrc = zkr__request(c, &rq, deadline);
        int64_t sent = rq.session;
        if (zrc == ZOK && st)
            *st = rq.stat;
        zkr__rq_clear(&rq);
        if (zrc == ZOK) {
            *outcome = ZKR__VW_APPLIED;
            return ZKR_OK;
        }
        if (zrc == ZBADVERSION || zrc == ZNODEEXISTS || (zrc == ZNONODE && !w->create)) {
            if (!was_lost && zrc == ZNONODE && w->version < 0)
                return ZKR_ENONODE;
            if (!was_lost) {
                *outcome = ZKR__VW_RACE;
                return ZKR_OK;
            }
            *outcome = zrc == ZNONODE ? ZKR__VW_UNKNOWN : settle(c, w, deadline);
            return ZKR_OK;
        }
        /* sent, its answer not had (the deadline, or the client closing) */
        int maybe = lost(zrc) || ((zrc == ZOPERATIONTIMEOUT || zrc == ZCLOSING) && sent != 0);
        if (maybe)
            was_lost = 1;
        if (was_lost && (!maybe || (!w->create && w->version < 0) || zkr__remaining_ms(deadline) <= LOST_PAUSE_MS)) {
            /* cannot be sent again (unconditional, out of time, or refused
             * for another reason after a lost copy) */
            *outcome = ZKR__VW_UNKNOWN;
            return ZKR_OK;
        }
        if (!was_lost)
            return zkr__rq_error(zrc);
        zkr__sleep_ms(LOST_PAUSE_MS);
    }
}

/* ---- retry policies ------------------------------------------------------ */

int zkr_retry_exponential(zkr_retry_t *r, int64_t base_sleep_ms, int max_retries, int64_t max_sleep_ms)
{
    zkr_retry_t t = {ZKR_RETRY_EXPONENTIAL, max_retries, base_sleep_ms, max_sleep_ms, 0};
    if (!r || !zkr__retry_valid(&t))
        return ZKR_EINVAL;
    *r = t;
    return ZKR_OK;
}

int zkr_retry_until_elapsed(zkr_retry_t *r, int64_t max_elapsed_ms, int64_t sleep_ms)
{
    zkr_retry_t t = {ZKR_RETRY_UNTIL_ELAPSED, 0, sleep_ms, sleep_ms, max_elapsed_ms};
    if (!r || !zkr__retry_valid(&t))
        return ZKR_EINVAL;
    *r = t;
    return ZKR_OK;
}

int zkr__retry_valid(const zkr_retry_t *r)
{
    if (!r || r->base_sleep_ms < 0)
        return 0;
    if (r->kind == ZKR_RETRY_EXPONENTIAL)
        return r->max_retries >= 0 && r->max_retries <= 29 && r->max_sleep_ms >= r->base_sleep_ms;
    if (r->kind == ZKR_RETRY_UNTIL_ELAPSED)
        return r->max_elapsed_ms >= 0;
    return 0;
}

/* A thread's own generator (xorshift), seeded from the clock and its
 * stack: the sleeps only need to differ between threads. */
static uint32_t next_random(void)
{
    static _Thread_local uint32_t s;
    if (s == 0) {
        uint64_t seed = (uint64_t)zkr__now_ms() ^ (uint64_t)(uintptr_t)&s;
        s = (uint32_t)(seed ^ (seed >> 32)) | 1u;
    }
    s ^= s << 13;
    s ^= s >> 17;
    s ^= s << 5;
    return s;
}

int zkr__retry_sleep(const zkr_retry_t *r, int tries, int64_t start_ms, int64_t deadline, int *late)
{
    int retry = tries - 1; /* Curator's retryCount */
    int64_t ms;
    if (r->kind == ZKR_RETRY_EXPONENTIAL) {
        if (retry >= r->max_retries)
            return 0;
        uint32_t span = 1u << (retry + 1); /* retry <= 28 */
        uint32_t n = next_random() % span;
        ms = r->base_sleep_ms * (int64_t)(n > 1 ? n : 1);
        if (ms > r->max_sleep_ms || ms < 0)
            ms = r->max_sleep_ms;
    } else {
        if (zkr__now_ms() - start_ms >= r->max_elapsed_ms)
            return 0;
        ms = r->base_sleep_ms;
    }
    if (zkr__remaining_ms(deadline) <= ms) {
        *late = 1;
        return 0;
    }
    zkr__sleep_ms(ms);
    return 1;
}

/* One ZooKeeper request awaited until a deadline (session/requests.c): the
 * recipes built on plain reads and writes (persistent nodes, membership,
 * discovery, counters, barriers) send their requests through it, so that
 * every one of their timeouts holds when the link stalls. */
#ifndef ZKR_SESSION_REQUESTS_H
#define ZKR_SESSION_REQUESTS_H

#include "session/core.h"

typedef enum zkr__rq_type {
    ZKR__RQ_GET = 1,      /* data and stat */
    ZKR__RQ_SET = 2,      /* data, version (-1: any); stat */
    ZKR__RQ_CREATE = 3,   /* data, mode; created, stat */
    ZKR__RQ_DELETE = 4,   /* version (-1: any) */
    ZKR__RQ_EXISTS = 5,   /* stat */
    ZKR__RQ_CHILDREN = 6  /* names, count, stat (the parent's) */
} zkr__rq_type_t;

typedef struct zkr__rq {
    /* the request */
    zkr__rq_type_t type;
    const char *path;
    const char *data; /* SET, CREATE: data_len bytes (NULL: none) */
    int data_len;
    int version;      /* SET, DELETE: the expected version, -1 any */
    int mode;         /* CREATE: ZOO_PERSISTENT, ZOO_EPHEMERAL, ZOO_*_SEQUENTIAL,
                         ZOO_CONTAINER */
    int parents;      /* CREATE: a missing parent is created (with its own,
                         as containers, the client's ACL), then the create
                         sent again */
    void *watch;      /* GET, EXISTS, CHILDREN: a subscription's context
                         (zkr__sub_add) to watch with; NULL: no watch.
                         EXISTS sets it also when the node is missing. */
    /* the answer (zkr__rq_clear frees it) */
    struct Stat stat;  /* GET, SET, EXISTS, CREATE, CHILDREN (ZOK) */
    char *value;       /* GET: value_len bytes and a NUL byte (NULL if the
                          node has no data) */
    int value_len;
    char *created;     /* CREATE: the path made (sequential: with its number) */
    char **names;      /* CHILDREN: count names, sorted bytewise */
    size_t count;
    int64_t session;   /* the session it was sent on; 0: nothing sent (a
                          create refused for a missing parent: whether
                          it was sent again after the parents) */
    int rc;            /* zkr__request_all: its own code (as zkr__request's) */
} zkr__rq_t;

/* Send r on the client's current handle once connected (waiting for that
 * until the deadline) and wait for its answer until the deadline.  Marks
 * the caller as in a blocking call (zkr_client_close waits for it).
 * Returns the ZooKeeper code: the server's answer (ZOK, ZNONODE,
 * ZNODEEXISTS, ZBADVERSION, ZNOTEMPTY, ZNOAUTH, ...; through
 * zkr__zh_answer); ZOPERATIONTIMEOUT if the deadline passed first (sent
 * or not: r->session says; a sent write may still be applied);
 * ZCONNECTIONLOSS (a write may or may not have been applied);
 * ZSESSIONEXPIRED; ZAUTHFAILED (the server refused the client's
 * credentials: nothing sent); ZCLOSING (the client is closing: nothing
 * sent, or, r->session set, sent and its answer no longer awaited: a
 * write may still be applied); ZSYSTEMERROR (no memory).  The previous
 * answer in r is freed first. */
int zkr__request(zkr_client_t *c, zkr__rq_t *r, int64_t deadline);

/* The n requests of rs (no parents made: rs[i].parents is ignored) sent at
 * once on the client's current handle once connected (waiting for that
 * until the deadline), then each answer awaited until the deadline: each
 * rs[i].rc gets its code as zkr__request would return it (ZOPERATIONTIMEOUT
 * for one not answered in time: a sent write may still be applied), its
 * answer in rs[i].  Many reads cost about one round trip instead of n.
 * Returns ZOK (every request answered, whatever its code),
 * ZOPERATIONTIMEOUT (the deadline passed first, before sending or with
 * some not answered), ZCLOSING (the client is closing); ZSYSTEMERROR (no
 * memory).  Marks the caller as in a blocking call, as zkr__request. */
int zkr__request_all(zkr_client_t *c, zkr__rq_t *rs, size_t n, int64_t deadline);

/* Free r's answer (not its request).  NULL is a no-op. */
void zkr__rq_clear(zkr__rq_t *r);

/* zkrecipes' code for a ZooKeeper code from zkr__request: ZOK -> ZKR_OK,
 * ZOPERATIONTIMEOUT -> ZKR_ETIMEDOUT, ZCLOSING -> ZKR_ECLOSED, the rest as
 * zkr__zk_error. */
int zkr__rq_error(int zrc);

#endif

/* zkrecipes error codes.  Every function returning int returns 0 (ZKR_OK) on
 * success or one of these negative codes. */
#ifndef ZKR_ERRORS_H
#define ZKR_ERRORS_H

#include "zkr/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The one table of error codes: XX(name, value, message).  The enum, the
 * names (zkr_err_name) and the messages (zkr_strerror) are generated from
 * it, so they cannot disagree. */
#define ZKR_ERRNO_MAP(XX)                                                                       \
    XX(EINVAL, -1, "invalid argument")                  /* NULL, malformed path, count <= 0 */ \
    XX(ENOMEM, -2, "out of memory")                                                             \
    XX(ETIMEDOUT, -3, "timed out")                      /* the timeout passed first */          \
    XX(ECONNLOSS, -4, "no connection to ZooKeeper")     /* SUSPENDED; outcome unknown */        \
    XX(ESESSIONLOST, -5, "ZooKeeper session lost")      /* expired or declared LOST */          \
    XX(ECLOSED, -6, "client closed")                    /* the client is closing or closed */   \
    XX(ENOTOWNER, -7, "not held by the caller")         /* release of what is not held */       \
    XX(ENONODE, -8, "node does not exist")              /* a ZooKeeper node */                  \
    XX(ENODEEXISTS, -9, "node already exists")          /* a ZooKeeper node */                  \
    XX(ENOAUTH, -10, "not authorised by ZooKeeper")     /* ACL or auth failure */               \
    XX(EBUSY, -11, "hold count would overflow")         /* a thread's holds past INT_MAX */     \
    XX(EDEADLK, -12, "the call would wait for the calling thread itself") /* from a callback */ \
    XX(ELOST, -13, "hold was lost (session gone, or node deleted by another)")                 \
    XX(EBADDATA, -14, "malformed data in ZooKeeper")                                            \
    XX(EZOOKEEPER, -15, "ZooKeeper error")              /* another ZooKeeper error */           \
    XX(ESYSTEM, -16, "system error")                    /* threads, randomness */              \
    XX(EDELETED, -17, "our node was deleted by another session") /* while we waited */      \
    XX(ECANCELED, -18, "acquire cancelled")             /* zkr_async_cancel, object freed */    \
    XX(EGUARD, -19, "hold no longer stands: nothing was written") /* guarded write */        \
    XX(ENOTLEADER, -20, "not the leader")               /* proclaim, token, guarded write */   \
    XX(ESTATE, -21, "not started, started already, or closed") /* latch, selector lifecycle */ \
    XX(ENOTFOUND, -22, "no such registration")          /* listener, asynchronous acquire id */ \
    XX(EALREADY, -23, "already registered")             /* the same listener twice */           \
    XX(ENEVER, -24, "request can never be granted")     /* upgrade, n over the leases */

typedef enum zkr_error {
    ZKR_OK = 0,
#define ZKR_ERR_ENUM_(name, value, msg) ZKR_##name = (value),
    ZKR_ERRNO_MAP(ZKR_ERR_ENUM_)
#undef ZKR_ERR_ENUM_
} zkr_error_t;

/* A static English description of `err`; never NULL (unknown codes give
 * "unknown error"). */
ZKR_EXTERN const char *zkr_strerror(int err);

/* The symbolic name of `err` ("ZKR_ETIMEDOUT"); "ZKR_E?" for unknown codes. */
ZKR_EXTERN const char *zkr_err_name(int err);

/* The detail behind a code that hides a ZooKeeper error (ZKR_EZOOKEEPER
 * above all, also ZKR_ENOAUTH, ZKR_ECONNLOSS, ZKR_ENONODE, ...): the last
 * ZooKeeper return code (ZOO_ERRORS of <zookeeper/zookeeper.h>, negative)
 * that a call made on the calling thread turned into a ZKR_E... code, and,
 * if message is not NULL, ZooKeeper's text for it (static).  Returns 0 (and
 * "no ZooKeeper error") if this thread has had none.  Per thread: another
 * thread's calls never change it. */
ZKR_EXTERN int zkr_last_zk_error(const char **message);

#ifdef __cplusplus
}
#endif
#endif

/* zkrecipes error codes.  Every function returning int returns 0 (ZKR_OK) on
 * success or one of these negative codes. */
#ifndef ZKR_ERRORS_H
#define ZKR_ERRORS_H

#include "zkr/common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum zkr_error {
    ZKR_OK = 0,
    ZKR_EINVAL = -1,        /* bad argument (NULL, malformed path, count <= 0, ...) */
    ZKR_ENOMEM = -2,        /* out of memory */
    ZKR_ETIMEDOUT = -3,     /* the timeout passed before the operation could finish */
    ZKR_ECONNLOSS = -4,     /* no connection to ZooKeeper (SUSPENDED); outcome unknown */
    ZKR_ESESSIONLOST = -5,  /* the ZooKeeper session expired or was declared LOST */
    ZKR_ECLOSED = -6,       /* the client is closing or closed */
    ZKR_ENOTOWNER = -7,     /* release of something the caller does not hold */
    ZKR_ENONODE = -8,       /* a node the operation needs does not exist */
    ZKR_ENODEEXISTS = -9,   /* a node the operation creates already exists */
    ZKR_ENOAUTH = -10,      /* ZooKeeper refused the operation (ACL or auth failure) */
    ZKR_EBUSY = -11,        /* the object is in use (e.g. freeing a held lock) */
    ZKR_EDEADLK = -12,      /* the request can never be granted (e.g. lock upgrade) */
    ZKR_ELOST = -13,        /* the hold was lost with the session before this call */
    ZKR_EBADDATA = -14,     /* malformed data read from ZooKeeper */
    ZKR_EZOOKEEPER = -15,   /* another ZooKeeper error (see the log) */
    ZKR_ESYSTEM = -16       /* a system call failed (threads, randomness) */
} zkr_error_t;

/* A static English description of `err`; never NULL (unknown codes give
 * "unknown error"). */
ZKR_EXTERN const char *zkr_strerror(int err);

/* The symbolic name of `err` ("ZKR_ETIMEDOUT"); "ZKR_E?" for unknown codes. */
ZKR_EXTERN const char *zkr_err_name(int err);

#ifdef __cplusplus
}
#endif
#endif

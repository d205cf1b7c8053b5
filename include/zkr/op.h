/* The writes of a guarded write (zkr/guard.h and each hold's
 * *_guarded_write): one ZooKeeper operation each. */
#ifndef ZKR_OP_H
#define ZKR_OP_H

#include "zkr/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The most operations one guarded write may carry (the guard's check is
 * added to them). */
#define ZKR_GUARD_OPS_MAX 1000

typedef enum zkr_op_type {
    ZKR_OP_CREATE = 1, /* create path with data (flags: ZKR_CREATE_*) */
    ZKR_OP_DELETE = 2, /* delete path at version (-1: any) */
    ZKR_OP_SET = 3,    /* set path's data at version (-1: any) */
    ZKR_OP_CHECK = 4   /* path exists at version (-1: any version) */
} zkr_op_type_t;

/* Flags of a create (ZooKeeper's modes).  A guarded create of an
 * ephemeral node belongs to the client's current session. */
#define ZKR_CREATE_PERSISTENT 0
#define ZKR_CREATE_EPHEMERAL 1
#define ZKR_CREATE_SEQUENTIAL 2

/* One write.  The program fills type, path, data/data_len (create, set),
 * flags (create), version (delete, set, check); the call fills rc (the
 * operation's own result: ZKR_OK, or why the transaction was refused:
 * ZKR_ENONODE, ZKR_ENODEEXISTS, ZKR_ENOAUTH, ZKR_EZOOKEEPER (a version
 * mismatch among others: zkr_last_zk_error tells which); ZKR_OK for every operation of a refused
 * transaction that was not the cause) and, for a create, created (the
 * node's path as made, sequence included: the caller's, freed with
 * zkr_free or zkr_ops_clear; NULL otherwise).  Creates use the client's ACL (zkr_client_options_t). */
typedef struct zkr_op {
    zkr_op_type_t type;
    const char *path;
    const char *data;
    size_t data_len;
    int flags;
    int32_t version;
    /* results */
    int rc;
    char *created;
} zkr_op_t;

#define ZKR_OP_CREATE_INIT(p, d, len, fl) {ZKR_OP_CREATE, (p), (d), (len), (fl), -1, 0, NULL}
#define ZKR_OP_DELETE_INIT(p, ver) {ZKR_OP_DELETE, (p), NULL, 0, 0, (ver), 0, NULL}
#define ZKR_OP_SET_INIT(p, d, len, ver) {ZKR_OP_SET, (p), (d), (len), 0, (ver), 0, NULL}
#define ZKR_OP_CHECK_INIT(p, ver) {ZKR_OP_CHECK, (p), NULL, 0, 0, (ver), 0, NULL}

/* The largest data a create or set may carry (ZooKeeper's default
 * jute.maxbuffer, 1 MiB, less room for the request's other fields). */
#define ZKR_DATA_MAX (1024 * 1024 - 16 * 1024)

/* Free what a guarded write put in ops (the created paths); sets them to
 * NULL.  NULL ops is a no-op. */
ZKR_EXTERN void zkr_ops_clear(zkr_op_t *ops, size_t n);

#ifdef __cplusplus
}
#endif
#endif

/* Error codes: texts, names, and the ZooKeeper mapping. */
#include "config.h"

#include "recipes/internal.h"
#include "zkr/errors.h"

const char *zkr_version(void)
{
    return PACKAGE_VERSION;
}

const char *zkr_hold_state_name(zkr_hold_state_t s)
{
    switch (s) {
    case ZKR_HOLD_NONE: return "NONE";
    case ZKR_HOLD_SAFE: return "SAFE";
    case ZKR_HOLD_IN_DOUBT: return "IN_DOUBT";
    case ZKR_HOLD_LOST: return "LOST";
    }
    return "UNKNOWN";
}

const char *zkr_strerror(int err)
{
    switch (err) {
    case ZKR_OK: return "success";
    case ZKR_EINVAL: return "invalid argument";
    case ZKR_ENOMEM: return "out of memory";
    case ZKR_ETIMEDOUT: return "timed out";
    case ZKR_ECONNLOSS: return "no connection to ZooKeeper";
    case ZKR_ESESSIONLOST: return "ZooKeeper session lost";
    case ZKR_ECLOSED: return "client closed";
    case ZKR_ENOTOWNER: return "not held by the caller";
    case ZKR_ENONODE: return "node does not exist";
    case ZKR_ENODEEXISTS: return "node already exists";
    case ZKR_ENOAUTH: return "not authorised by ZooKeeper";
    case ZKR_EBUSY: return "object in use";
    case ZKR_EDEADLK: return "request can never be granted (would deadlock)";
    case ZKR_ELOST: return "hold was lost with the session";
    case ZKR_EBADDATA: return "malformed data in ZooKeeper";
    case ZKR_EZOOKEEPER: return "ZooKeeper error";
    case ZKR_ESYSTEM: return "system error";
    }
    return "unknown error";
}

const char *zkr_err_name(int err)
{
    switch (err) {
    case ZKR_OK: return "ZKR_OK";
    case ZKR_EINVAL: return "ZKR_EINVAL";
    case ZKR_ENOMEM: return "ZKR_ENOMEM";
    case ZKR_ETIMEDOUT: return "ZKR_ETIMEDOUT";
    case ZKR_ECONNLOSS: return "ZKR_ECONNLOSS";
    case ZKR_ESESSIONLOST: return "ZKR_ESESSIONLOST";
    case ZKR_ECLOSED: return "ZKR_ECLOSED";
    case ZKR_ENOTOWNER: return "ZKR_ENOTOWNER";
    case ZKR_ENONODE: return "ZKR_ENONODE";
    case ZKR_ENODEEXISTS: return "ZKR_ENODEEXISTS";
    case ZKR_ENOAUTH: return "ZKR_ENOAUTH";
    case ZKR_EBUSY: return "ZKR_EBUSY";
    case ZKR_EDEADLK: return "ZKR_EDEADLK";
    case ZKR_ELOST: return "ZKR_ELOST";
    case ZKR_EBADDATA: return "ZKR_EBADDATA";
    case ZKR_EZOOKEEPER: return "ZKR_EZOOKEEPER";
    case ZKR_ESYSTEM: return "ZKR_ESYSTEM";
    }
    return "ZKR_E?";
}

int zkr__zk_error(int zrc)
{
    /* ZooKeeper's codes are const ints, not macros: no switch. */
    if (zrc == ZOK)
        return ZKR_OK;
    if (zrc == ZNONODE)
        return ZKR_ENONODE;
    if (zrc == ZNODEEXISTS)
        return ZKR_ENODEEXISTS;
    /* ZRUNTIMEINCONSISTENCY: the C client dropped the connection over a
     * reply it did not expect; the request's fate is unknown. */
    if (zrc == ZCONNECTIONLOSS || zrc == ZOPERATIONTIMEOUT || zrc == ZRUNTIMEINCONSISTENCY)
        return ZKR_ECONNLOSS;
    if (zrc == ZSESSIONEXPIRED || zrc == ZSESSIONMOVED || zrc == ZINVALIDSTATE)
        return ZKR_ESESSIONLOST;
    if (zrc == ZNOAUTH || zrc == ZAUTHFAILED)
        return ZKR_ENOAUTH;
    if (zrc == ZCLOSING)
        return ZKR_ECLOSED;
    if (zrc == ZBADARGUMENTS)
        return ZKR_EINVAL;
    if (zrc == ZSYSTEMERROR || zrc == ZMARSHALLINGERROR)
        return ZKR_ESYSTEM;
    return ZKR_EZOOKEEPER;
}

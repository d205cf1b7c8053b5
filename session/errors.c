/* Error codes: names and messages from the one table (ZKR_ERRNO_MAP), the
 * ZooKeeper classifier and mapping. */
#include "config.h"


#include "session/core.h"
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
#define ZKR_ERR_MSG_(name, value, msg) case ZKR_##name: return msg;
    ZKR_ERRNO_MAP(ZKR_ERR_MSG_)
#undef ZKR_ERR_MSG_
    }
    return "unknown error";
}

const char *zkr_err_name(int err)
{
    switch (err) {
    case ZKR_OK: return "ZKR_OK";
#define ZKR_ERR_NAME_(name, value, msg) case ZKR_##name: return "ZKR_" #name;
    ZKR_ERRNO_MAP(ZKR_ERR_NAME_)
#undef ZKR_ERR_NAME_
    }
    return "ZKR_E?";
}

/* ZooKeeper's codes are an enum (ZOO_ERRORS): compared with if. */
zkr__zk_class_t zkr__zk_class(int zrc)
{
    if (zrc == ZOK)
        return ZKR__ZC_OK;
    if (zrc == ZCONNECTIONLOSS || zrc == ZOPERATIONTIMEOUT || zrc == ZRUNTIMEINCONSISTENCY)
        return ZKR__ZC_CONNECTION;
    if (zrc == ZSESSIONEXPIRED || zrc == ZSESSIONMOVED || zrc == ZINVALIDSTATE || zrc == ZCLOSING)
        return ZKR__ZC_SESSION;
    return ZKR__ZC_FINAL;
}

/* The last ZooKeeper code this thread turned into a ZKR_E... code. */
static _Thread_local int last_zrc;

int zkr_last_zk_error(const char **message)
{
    if (message)
        *message = last_zrc ? zerror(last_zrc) : "no ZooKeeper error";
    return last_zrc;
}

static int map_zk_error(int zrc);

int zkr__zk_error(int zrc)
{
    if (zrc != ZOK)
        last_zrc = zrc;
    return map_zk_error(zrc);
}

static int map_zk_error(int zrc)
{
    switch (zkr__zk_class(zrc)) {
    case ZKR__ZC_OK: return ZKR_OK;
    case ZKR__ZC_CONNECTION: return ZKR_ECONNLOSS;
    case ZKR__ZC_SESSION: return zrc == ZCLOSING ? ZKR_ECLOSED : ZKR_ESESSIONLOST;
    case ZKR__ZC_FINAL: break;
    }
    if (zrc == ZNONODE)
        return ZKR_ENONODE;
    if (zrc == ZNODEEXISTS)
        return ZKR_ENODEEXISTS;
    if (zrc == ZNOAUTH || zrc == ZAUTHFAILED)
        return ZKR_ENOAUTH;
    if (zrc == ZBADARGUMENTS)
        return ZKR_EINVAL;
    if (zrc == ZSYSTEMERROR || zrc == ZMARSHALLINGERROR)
        return ZKR_ESYSTEM;
    return ZKR_EZOOKEEPER;
}

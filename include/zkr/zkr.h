/* zkrecipes: Curator-compatible distributed lock recipes on Apache
 * ZooKeeper.  Include this one header. */
#ifndef ZKR_ZKR_H
#define ZKR_ZKR_H

#include "zkr/version.h"
#include "zkr/common.h"
#include "zkr/errors.h"
#include "zkr/client.h"
#include "zkr/mutex.h"
#include "zkr/semaphore.h"
#include "zkr/rwlock.h"
#include "zkr/lock.h"
#include "zkr/multilock.h"
#include "zkr/op.h"
#include "zkr/hold.h"
#include "zkr/async.h"
#include "zkr/guard.h"
#include "zkr/leader.h"
#include "zkr/cache.h"
#include "zkr/counter.h"
#include "zkr/barrier.h"
#include "zkr/pnode.h"
#include "zkr/group.h"
#include "zkr/discovery.h"

#endif

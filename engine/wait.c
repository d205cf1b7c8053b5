/* The one watch-and-wait loop of the blocking path: a step function makes
 * its reads with watches and decides; the loop waits for the watch, a
 * session event, the deletion of the caller's own node, the deadline or
 * close.  Work that belongs to a session ends with ZKR_ESESSIONLOST when
 * that session is gone. */
#include "config.h"

#include "engine/engine.h"

int zkr__watch_loop(zkr_client_t *c, int64_t session, zkr__track_t *own, int64_t deadline, zkr__step_fn step,
                    void *arg)
{
    zkr__waiter_t w;
    int rc = zkr__waiter_init(c, &w);
    if (rc != ZKR_OK)
        return rc;
    if (own)
        zkr__track_set_waiter(c, own, w.id);
    for (;;) {
        zkr__zh_t *h;
        if ((rc = zkr__client_get_handle(c, &h)) != ZKR_OK)
            break;
        if (zkr__zh_session(c, h) != session) {
            /* The work belonged to a session that is gone. */
            zkr__client_put_handle(c, h);
            rc = ZKR_ESESSIONLOST;
            break;
        }
        zkr__waiter_arm(c, &w);
        int r = step(arg, c, h, &w, zkr__remaining_ms(deadline) != 0);
        zkr__client_put_handle(c, h);
        w.last = 0;
        if (r == ZKR__STEP_AGAIN)
            continue;
        if (r == ZKR__STEP_WAIT) {
            unsigned ev = zkr__waiter_wait(c, &w, deadline);
            w.last = ev;
            if (ev & ZKR__WAKE_CLOSE) {
                rc = ZKR_ECLOSED;
                break;
            }
            if (ev == 0) {
                rc = ZKR_ETIMEDOUT;
                break;
            }
            if (!(ev & ZKR__WAKE_SESSION))
                continue;
            /* Cut off briefly: keep our place and wait for the same
             * session; if it is lost, so is the work. */
        } else if (r != ZKR__STEP_RECONNECT) {
            rc = r;
            break;
        }
        if ((rc = zkr__client_wait_session(c, session, deadline)) != ZKR_OK)
            break;
    }
    if (own)
        zkr__track_set_waiter(c, own, 0);
    zkr__waiter_destroy(c, &w);
    return rc;
}


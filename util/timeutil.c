/* Monotonic time, deadlines and condition variables waiting on them. */
#include "util/util.h"

#include <errno.h>

void zkr__sleep_ms(int64_t ms)
{
    if (ms <= 0)
        return;
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

int64_t zkr__now_ms(void)
{
    struct timespec ts;

    /* CLOCK_MONOTONIC cannot fail on Linux with a valid pointer */
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
        return 0;
    return (int64_t)ts.tv_sec * 1000 + (int64_t)(ts.tv_nsec / 1000000);
}

int64_t zkr__deadline(int64_t timeout_ms)
{
    int64_t now;

    if (timeout_ms < 0)
        return INT64_MAX;
    now = zkr__now_ms();
    if (timeout_ms > INT64_MAX - now)
        return INT64_MAX;
    return now + timeout_ms;
}

int64_t zkr__remaining_ms(int64_t deadline)
{
    int64_t now;

    if (deadline == INT64_MAX)
        return INT64_MAX;
    now = zkr__now_ms();
    if (deadline <= now)
        return 0;
    return deadline - now;
}

int zkr__cond_init(pthread_cond_t *cond)
{
    pthread_condattr_t attr;
    int rc;

    if (cond == NULL)
        return EINVAL;
    rc = pthread_condattr_init(&attr);
    if (rc != 0)
        return rc;
    rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    if (rc == 0)
        rc = pthread_cond_init(cond, &attr);
    pthread_condattr_destroy(&attr);
    return rc;
}

/* The largest time_t, without assuming its width. */
static time_t time_t_max(void)
{
    /* time_t is a signed integer type on every POSIX system we build on */
    return (time_t)(sizeof(time_t) >= sizeof(int64_t) ? INT64_MAX : INT32_MAX);
}

int zkr__sync_init(pthread_mutex_t *mu, pthread_cond_t *cond)
{
    int rc = pthread_mutex_init(mu, NULL);
    if (rc != 0)
        return rc;
    if ((rc = zkr__cond_init(cond)) != 0)
        pthread_mutex_destroy(mu);
    return rc;
}

void zkr__sync_destroy(pthread_mutex_t *mu, pthread_cond_t *cond)
{
    pthread_cond_destroy(cond);
    pthread_mutex_destroy(mu);
}

/* `cond` must have been set up by zkr__cond_init (monotonic clock).
 * Other pthread errors (EINVAL, EPERM: programming errors) are passed on. */
int zkr__cond_wait_until(pthread_cond_t *cond, pthread_mutex_t *mu, int64_t deadline)
{
    struct timespec ts;
    int64_t sec;
    int rc;

    if (cond == NULL || mu == NULL)
        return EINVAL;
    if (deadline == INT64_MAX)
        return pthread_cond_wait(cond, mu);
    if (zkr__now_ms() >= deadline)
        return ETIMEDOUT;

    /* deadline > now >= 0 here */
    sec = deadline / 1000;
    if (sec > (int64_t)time_t_max()) {
        ts.tv_sec = time_t_max();
        ts.tv_nsec = 999999999L;
    } else {
        ts.tv_sec = (time_t)sec;
        ts.tv_nsec = (long)(deadline % 1000) * 1000000L;
    }
    rc = pthread_cond_timedwait(cond, mu, &ts);
    if (rc == ETIMEDOUT)
        return zkr__now_ms() >= deadline ? ETIMEDOUT : 0;
    return rc;
}

/* Logging: the library's own messages and the ZooKeeper C client's lines
 * for a client's handles go to that client's log callback, or, without
 * one, to stderr in one format.
 *
 * The C client's per-handle log callback takes no context, so each handle
 * gets one of a fixed set of trampolines, whose slot names the client.  A
 * slot is taken before the handle is made and given back after it is
 * closed (no line of it can come later).  A line is delivered under its
 * slot's own mutex, which giving the slot back also takes, so a client is
 * never freed under a line being delivered, and a slow log function holds
 * up only its own handle's I/O thread, never another client's. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "session/core_private.h"

#define SLOTS 64

static pthread_mutex_t slots_mu = PTHREAD_MUTEX_INITIALIZER; /* taking a slot */
static zkr_client_t *slots[SLOTS];                              /* slots_mu and its slot_mu */
#define M8 PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, \
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, \
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER
static pthread_mutex_t slot_mu[SLOTS] = {M8, M8, M8, M8, M8, M8, M8, M8};
#undef M8

static const char *level_name(int level)
{
    static const char *const names[] = {"error", "error", "warning", "info", "debug"};
    return level >= 0 && level <= 4 ? names[level] : "debug";
}

/* Deliver one line.  Caller holds c's slot's mutex or owns c (no handle
 * can be closed under it). */
static void emit(zkr_client_t *c, int level, const char *source, const char *msg, int threshold)
{
    if (level > threshold)
        return;
    if (c && c->log_fn)
        c->log_fn(c, level, source, msg, c->log_ctx);
    else
        fprintf(stderr, "%s: %s: %s\n", source, level_name(level), msg);
}

void zkr__log(zkr_client_t *c, int level, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    emit(c, level, "zkrecipes", msg, c ? c->log_level : ZKR_LOG_WARN);
}

/* "...:ZOO_WARN@func@line: text" -> ZKR_LOG_WARN and the text. */
static int zk_level(const char *line, const char **text)
{
    static const struct {
        const char *tag;
        int level;
    } tags[] = {{"ZOO_ERROR@", ZKR_LOG_ERROR}, {"ZOO_WARN@", ZKR_LOG_WARN}, {"ZOO_INFO@", ZKR_LOG_INFO},
                {"ZOO_DEBUG@", ZKR_LOG_DEBUG}};
    *text = line;
    for (size_t i = 0; i < sizeof tags / sizeof tags[0]; i++) {
        const char *p = strstr(line, tags[i].tag);
        if (p) {
            const char *colon = strstr(p, ": ");
            *text = colon ? colon + 2 : p;
            return tags[i].level;
        }
    }
    return ZKR_LOG_INFO;
}

static void dispatch(int slot, const char *line)
{
    const char *text;
    int level = zk_level(line, &text);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", text);
    size_t n = strlen(msg);
    while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
        msg[--n] = '\0';
    pthread_mutex_lock(&slot_mu[slot]);
    zkr_client_t *c = slots[slot];
    if (c)
        emit(c, level, "zookeeper", msg, c->zk_log_level >= 0 ? c->zk_log_level : c->log_level);
    pthread_mutex_unlock(&slot_mu[slot]);
}

#define T(b, k)                                                                                          \
    static void tramp_##b##_##k(const char *line)                                                        \
    {                                                                                                    \
        dispatch((b) * 8 + (k), line);                                                                   \
    }
#define T8(b) T(b, 0) T(b, 1) T(b, 2) T(b, 3) T(b, 4) T(b, 5) T(b, 6) T(b, 7)
T8(0) T8(1) T8(2) T8(3) T8(4) T8(5) T8(6) T8(7)
#undef T
#define T(b, k) tramp_##b##_##k,
static const log_callback_fn tramps[SLOTS] = {T8(0) T8(1) T8(2) T8(3) T8(4) T8(5) T8(6) T8(7)};
#undef T
#undef T8

log_callback_fn zkr__log_slot_take(zkr_client_t *c, int *slot)
{
    pthread_mutex_lock(&slots_mu);
    *slot = -1;
    for (int i = 0; i < SLOTS; i++) {
        if (!slots[i]) {
            pthread_mutex_lock(&slot_mu[i]);
            slots[i] = c;
            pthread_mutex_unlock(&slot_mu[i]);
            *slot = i;
            break;
        }
    }
    pthread_mutex_unlock(&slots_mu);
    if (*slot < 0) {
        zkr__log(c, ZKR_LOG_WARN, "more than %d ZooKeeper handles at once: this one logs to stderr", SLOTS);
        return NULL;
    }
    return tramps[*slot];
}

void zkr__log_slot_give(int slot)
{
    if (slot < 0 || slot >= SLOTS)
        return;
    pthread_mutex_lock(&slots_mu);
    pthread_mutex_lock(&slot_mu[slot]);
    slots[slot] = NULL;
    pthread_mutex_unlock(&slot_mu[slot]);
    pthread_mutex_unlock(&slots_mu);
}

int zkr_set_zk_log_level(int level)
{
    if (level < 0 || level > ZKR_LOG_DEBUG)
        return ZKR_EINVAL;
    zoo_set_debug_level((ZooLogLevel)level);
    return ZKR_OK;
}

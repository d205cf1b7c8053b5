/* Read/write lock (Curator InterProcessReadWriteLock): two drivers on one
 * directory and one ordering axis. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "recipes/recipes.h"
#include "recipes/holds.h"
#include "zkr/mutex.h"
#include "zkr/rwlock.h"

struct zkr_rwlock {
    zkr_client_t *c;
    char *path;
    pthread_mutex_t mu;
    zkr__holds_t reads;
    zkr__holds_t writes;
    zkr__hold_listener_t hold_read; /* each tells its half's reference */
    zkr__hold_listener_t hold_write;
};

static const char *rw_key(const char *name, const char *marker)
{
    (void)marker;
    return zkr__rw_sort_key(name);
}

static const int one_writer = 1;

const zkr__driver_t zkr__write_driver = {
    .marker = ZKR__WRITE_MARKER,
    .key = rw_key,
    .key_marker = NULL,
    .decide = zkr__decide_first_n,
    .decide_arg = &one_writer,
};

/* A reader holds it when no writer stands before it (Curator's
 * readLockPredicate); otherwise it watches the nearest writer before it,
 * not the first: that writer is the last of them to go, so a writer's
 * release wakes only the readers it admits (those between it and the next
 * writer), never the readers queued behind a later writer.  When the
 * watched writer goes, the reader looks again. */
static int decide_reader(const void *arg, char *const *sorted, size_t n, size_t ours, size_t *watch)
{
    (void)arg;
    (void)n;
    for (size_t i = ours; i-- > 0;) {
        if (strstr(sorted[i], ZKR__WRITE_MARKER)) {
            *watch = i;
            return 0;
        }
    }
    return 1;
}

const zkr__driver_t zkr__read_driver = {
    .marker = ZKR__READ_MARKER,
    .key = rw_key,
    .key_marker = NULL,
    .decide = decide_reader,
    .decide_arg = NULL,
};

int zkr_rwlock_new(zkr_rwlock_t **out, zkr_client_t *c, const char *path)
{
    if (out)
        *out = NULL;
    if (!out || !c || !zkr__path_valid(path))
        return ZKR_EINVAL;
    zkr_rwlock_t *l = calloc(1, sizeof *l);
    if (!l)
        return ZKR_ENOMEM;
    l->path = strdup(path);
    if (!l->path) {
        free(l);
        return ZKR_ENOMEM;
    }
    if (pthread_mutex_init(&l->mu, NULL) != 0) {
        free(l->path);
        free(l);
        return ZKR_ESYSTEM;
    }
    int rc = zkr__client_retain(c);
    if (rc != ZKR_OK) {
        pthread_mutex_destroy(&l->mu);
        free(l->path);
        free(l);
        return rc;
    }
    l->c = c;
    l->reads.mu = &l->mu;
    l->writes.mu = &l->mu;
    *out = l;
    return ZKR_OK;
}

/* The read node of a downgrade: named after the writer's own sequence and
 * created EPHEMERAL, so it sorts exactly where the write node stood. */
static int downgrade_name(const char *write_path, char *name, size_t len)
{
    char uuid[ZKR__UUID_LEN + 1];
    if (zkr__uuid(uuid) != 0)
        return ZKR_ESYSTEM;
    return zkr__downgrade_name(write_path, uuid, name, len) == 0 ? ZKR_OK : ZKR_EINVAL;
}

static int acquire_half(zkr_rwlock_t *l, int writer, int64_t timeout_ms)
{
    if (!l)
        return ZKR_EINVAL;
    int64_t deadline = zkr__deadline(timeout_ms);
    zkr__holds_t *mine = writer ? &l->writes : &l->reads;
    int rc = ZKR_OK;
    if (zkr__holds_reenter(mine, l->c, &rc))
        return rc;

    char *write_path = NULL;
    int64_t write_session = 0;
    pthread_mutex_lock(&l->mu);
    zkr__hold_t *wh = zkr__holds_mine_locked(&l->writes);
    zkr__hold_t *rh = zkr__holds_mine_locked(&l->reads);
    if (writer && rh) {
        pthread_mutex_unlock(&l->mu);
        return ZKR_ENEVER; /* upgrade: our own read node would block us forever */
    }
    if (!writer && wh) {
        write_path = strdup(wh->node.path);
        write_session = wh->node.session;
        if (!write_path) {
            pthread_mutex_unlock(&l->mu);
            return ZKR_ENOMEM;
        }
    }
    zkr__hold_listener_t hl = writer ? l->hold_write : l->hold_read;
    pthread_mutex_unlock(&l->mu);

    zkr__hold_t *h = calloc(1, sizeof *h);
    if (!h) {
        free(write_path);
        return ZKR_ENOMEM;
    }
    if ((rc = zkr__client_enter(l->c)) != ZKR_OK) {
        free(write_path);
        free(h);
        return rc;
    }
    if (write_path) {
        /* Downgrade: granted at once, since we hold the write lock. */
        char name[ZKR__UUID_LEN + 64];
        rc = downgrade_name(write_path, name, sizeof name);
        if (rc == ZKR_OK)
            rc = zkr__node_create_named(l->c, l->path, name, ZOO_EPHEMERAL, deadline, &h->node);
        /* Only the session that owns the write node may stand in its
         * place: if that session is gone, so is the write lock, and another
         * writer may hold it now. */
        if (rc == ZKR_OK && h->node.session != write_session) {
            zkr__node_delete(l->c, &h->node);
            rc = ZKR_ESESSIONLOST;
        }
        /* (a named node, not an acquire: its hold begins here) */
        if (rc == ZKR_OK && zkr__node_track(l->c, &h->node, hl) != ZKR_OK) {
            zkr__node_delete(l->c, &h->node);
            rc = ZKR_ENOMEM;
        }
    } else {
        rc = zkr__queue_acquire(l->c, l->path, writer ? &zkr__write_driver : &zkr__read_driver,
                                hl, deadline, &h->node);
    }
    zkr__client_leave(l->c);
    free(write_path);
    if (rc != ZKR_OK) {
        free(h);
        return rc;
    }
    zkr__holds_add(mine, h);
    return ZKR_OK;
}

int zkr_rwlock_read_acquire(zkr_rwlock_t *l, int64_t timeout_ms)
{
    return acquire_half(l, 0, timeout_ms);
}

int zkr_rwlock_write_acquire(zkr_rwlock_t *l, int64_t timeout_ms)
{
    return acquire_half(l, 1, timeout_ms);
}

static int hold_free(zkr_client_t *c, zkr__hold_t *h)
{
    int rc = zkr__node_delete(c, &h->node);
    free(h);
    return rc == ZKR_ECLOSED ? ZKR_OK : rc;
}

static int release_half(zkr_rwlock_t *l, zkr__holds_t *hs)
{
    zkr__hold_t *h = NULL;
    int rc = zkr__holds_drop(hs, &h);
    if (rc != ZKR_OK || !h)
        return rc;
    return hold_free(l->c, h);
}

int zkr_rwlock_read_release(zkr_rwlock_t *l)
{
    return l ? release_half(l, &l->reads) : ZKR_EINVAL;
}

int zkr_rwlock_write_release(zkr_rwlock_t *l)
{
    return l ? release_half(l, &l->writes) : ZKR_EINVAL;
}

static int is_held(zkr_rwlock_t *l, zkr__holds_t *hs)
{
    return zkr__holds_mine_alive(hs, l->c);
}

int zkr_rwlock_read_is_held(zkr_rwlock_t *l)
{
    return l ? is_held(l, &l->reads) : 0;
}

int zkr_rwlock_write_is_held(zkr_rwlock_t *l)
{
    return l ? is_held(l, &l->writes) : 0;
}

void zkr__rwlock_set_listener(zkr_rwlock_t *l, zkr__hold_listener_t read, zkr__hold_listener_t write)
{
    pthread_mutex_lock(&l->mu);
    l->hold_read = read;
    l->hold_write = write;
    pthread_mutex_unlock(&l->mu);
}

static zkr_hold_state_t half_state(zkr_rwlock_t *l, zkr__holds_t *hs)
{
    pthread_mutex_lock(&l->mu);
    zkr__hold_t *h = zkr__holds_mine_locked(hs);
    zkr_hold_state_t st = h ? zkr__node_hold_state(l->c, &h->node) : ZKR_HOLD_NONE;
    pthread_mutex_unlock(&l->mu);
    return st;
}

zkr_hold_state_t zkr_rwlock_read_hold_state(zkr_rwlock_t *l)
{
    return l ? half_state(l, &l->reads) : ZKR_HOLD_NONE;
}

zkr_hold_state_t zkr_rwlock_write_hold_state(zkr_rwlock_t *l)
{
    return l ? half_state(l, &l->writes) : ZKR_HOLD_NONE;
}

int zkr_rwlock_read_fencing_token(zkr_rwlock_t *l, int64_t *token)
{
    return (l && token) ? zkr__holds_token(&l->reads, token) : ZKR_EINVAL;
}

int zkr_rwlock_write_fencing_token(zkr_rwlock_t *l, int64_t *token)
{
    return (l && token) ? zkr__holds_token(&l->writes, token) : ZKR_EINVAL;
}

int zkr_rwlock_read_node_path(zkr_rwlock_t *l, char **path)
{
    if (path)
        *path = NULL;
    return (l && path) ? zkr__holds_path(&l->reads, path) : ZKR_EINVAL;
}

int zkr_rwlock_write_node_path(zkr_rwlock_t *l, char **path)
{
    if (path)
        *path = NULL;
    return (l && path) ? zkr__holds_path(&l->writes, path) : ZKR_EINVAL;
}

int zkr__rwlock_guard(zkr_rwlock_t *l, int writer, zkr__guard_t *g)
{
    return zkr__holds_guard(writer ? &l->writes : &l->reads, l->c, g);
}

int zkr_rwlock_participants(zkr_rwlock_t *l, char ***paths, size_t *count)
{
    return l ? zkr__participants(l->c, l->path, &zkr__write_driver, paths, count) : ZKR_EINVAL;
}

void zkr_rwlock_free(zkr_rwlock_t *l)
{
    if (!l)
        return;
    zkr__async_forget(l->c, l);
    zkr__tracks_forget(l->c, l); /* asynchronous holds outlive it */
    zkr__hold_t *h;
    while ((h = zkr__holds_pop(&l->reads)))
        hold_free(l->c, h);
    while ((h = zkr__holds_pop(&l->writes)))
        hold_free(l->c, h);
    pthread_mutex_destroy(&l->mu);
    zkr__client_release(l->c);
    free(l->path);
    free(l);
}

/* For the asynchronous layer (async.c): what an acquire of one half needs. */
void zkr__rwlock_async_target(zkr_rwlock_t *l, int writer, zkr__async_target_t *t)
{
    t->c = l->c;
    t->dir = l->path;
    t->drv = writer ? &zkr__write_driver : &zkr__read_driver;
    t->hold = zkr__hold_listener_get(&l->mu, writer ? &l->hold_write : &l->hold_read);
    t->owner = l;
}

/* Observing an election (beyond Curator; etcd's Observe): the observer's
 * thread reads the leader (list, Curator's order, the first node's data
 * with a data watch; a children watch on the path only while nobody takes
 * part, an exists watch while the path is missing) and looks again on
 * every watch event and reconnection; each change of leader node or value
 * is queued and told on the client thread, in order. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "recipes/election.h"

#define OBS_DELIVER (-100) /* our own post: tell the next change queued */
#define RETRY_MS 1000      /* a look that failed (no connection) is tried again */

typedef struct change {
    zkr_participant_t *leader; /* NULL: nobody */
    struct change *next;
} change_t;

struct zkr_observer {
    zkr_client_t *c;
    char *path;
    const zkr__driver_t *drv;
    zkr_observe_fn fn;
    void *ctx;
    void *sub; /* the watches' events and our deliveries, on the client thread */
    pthread_t thread;
    int listening;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    /* mu */
    int news, stop, reported;
    zkr_participant_t last; /* the last change told (node_path NULL: nobody) */
    change_t *head, *tail;
};

static int same_leader(const zkr_participant_t *a, const zkr_participant_t *b)
{
    if (!a->node_path || !b->node_path)
        return !a->node_path && !b->node_path;
    return strcmp(a->node_path, b->node_path) == 0 && a->token == b->token && a->id_len == b->id_len &&
           memcmp(a->id, b->id, a->id_len) == 0;
}

/* Queue `found` (moved in; node_path NULL: nobody) if it is a change. */
static void report(zkr_observer_t *o, zkr_participant_t *found)
{
    pthread_mutex_lock(&o->mu);
    if (o->reported && same_leader(&o->last, found)) {
        pthread_mutex_unlock(&o->mu);
        free(found->node_path);
        free(found->id);
        return;
    }
    change_t *ch = calloc(1, sizeof *ch);
    zkr_participant_t *copy = found->node_path ? calloc(1, sizeof *copy) : NULL;
    if (!ch || (found->node_path && !copy)) {
        pthread_mutex_unlock(&o->mu);
        free(ch);
        free(copy);
        free(found->node_path);
        free(found->id);
        zkr__log(o->c, ZKR_LOG_ERROR, "observer %s: out of memory, a change is not told", o->path);
        return;
    }
    free(o->last.node_path);
    free(o->last.id);
    o->last = *found;
    o->reported = 1;
    if (copy) {
        *copy = *found;
        copy->node_path = strdup(found->node_path);
        copy->id = malloc(found->id_len + 1);
        if (copy->id)
            memcpy(copy->id, found->id, found->id_len + 1);
        copy->is_leader = 1;
        if (!copy->node_path || !copy->id) {
            zkr_participants_free(copy, 1);
            copy = NULL;
            o->reported = 0; /* told as nobody: look again tells it right */
        }
    }
    ch->leader = copy;
    if (o->tail)
        o->tail->next = ch;
    else
        o->head = ch;
    o->tail = ch;
    pthread_mutex_unlock(&o->mu);
    zkr__sub_post(o->c, o->sub, OBS_DELIVER, NULL);
}

/* One look.  Returns ZKR_OK (reported; wait for a watch), 1 (changed
 * meanwhile: look again) or a code. */
static int look_on(zhandle_t *zh, int64_t session, void *arg)
{
    (void)session;
    zkr_observer_t *o = arg;
    watcher_fn w = zkr__sub_watcher();
    zkr__strvec_t kids;
    int rc = zkr__queue_list(zh, o->path, NULL, NULL, o->drv, &kids, NULL);
    if (rc == ZKR_OK && kids.n == 0)
        rc = zkr__queue_list(zh, o->path, w, o->sub, o->drv, &kids, NULL); /* told when someone joins */
    zkr_participant_t found;
    memset(&found, 0, sizeof found);
    if (rc == ZKR_ENONODE) {
        struct Stat st;
        int zrc = zoo_wexists(zh, o->path, w, o->sub, &st); /* told when the path comes */
        if (zrc == ZOK)
            return 1;
        if (zrc != ZNONODE)
            return zkr__zk_error(zrc);
        report(o, &found);
        return ZKR_OK;
    }
    if (rc != ZKR_OK)
        return rc;
    if (kids.n > 0) {
        char *first = zkr__path_join(o->path, kids.v[0]);
        int zrc = first ? zkr__participant_read(zh, first, w, o->sub, &found) : ZSYSTEMERROR;
        free(first);
        if (zrc == ZNONODE)
            rc = 1; /* the leader went meanwhile */
        else if (zrc != ZOK)
            rc = zrc == ZSYSTEMERROR ? ZKR_ENOMEM : zkr__zk_error(zrc);
    }
    zkr__strvec_free(&kids);
    if (rc == ZKR_OK) {
        found.is_leader = found.node_path != NULL;
        report(o, &found);
    }
    return rc;
}

static void *observe_main(void *arg)
{
    zkr_observer_t *o = arg;
    pthread_mutex_lock(&o->mu);
    while (!o->stop) {
        o->news = 0;
        pthread_mutex_unlock(&o->mu);
        int rc = zkr_client_with_handle(o->c, look_on, o);
        pthread_mutex_lock(&o->mu);
        if (rc == 1)
            continue;
        /* Failed (no connection: a reconnection brings news) or done:
         * wait for a watch, a state, or the retry. */
        int64_t retry = rc == ZKR_OK ? INT64_MAX : zkr__now_ms() + RETRY_MS;
        while (!o->stop && !o->news && zkr__now_ms() < retry) {
            int64_t slice = zkr__now_ms() + ZKR__CLOSED_POLL_MS;
            zkr__cond_wait_until(&o->cond, &o->mu, retry < slice ? retry : slice);
        }
    }
    pthread_mutex_unlock(&o->mu);
    return NULL;
}

static void wake(zkr_observer_t *o)
{
    pthread_mutex_lock(&o->mu);
    o->news = 1;
    pthread_cond_broadcast(&o->cond);
    pthread_mutex_unlock(&o->mu);
}

/* Client thread: a watch fired (look again), or a change to tell. */
static void on_event(zkr_client_t *c, void *arg, int type, const char *path)
{
    (void)c;
    (void)path;
    zkr_observer_t *o = arg;
    if (type != OBS_DELIVER) {
        wake(o);
        return;
    }
    pthread_mutex_lock(&o->mu);
    change_t *ch = o->head;
    if (ch && !(o->head = ch->next))
        o->tail = NULL;
    pthread_mutex_unlock(&o->mu);
    if (!ch)
        return;
    o->fn(o, ch->leader, o->ctx);
    zkr_participants_free(ch->leader, ch->leader ? 1 : 0);
    free(ch);
}

static void on_state(zkr_client_t *c, zkr_state_t state, void *ctx)
{
    (void)c;
    if (state == ZKR_STATE_RECONNECTED || state == ZKR_STATE_CONNECTED)
        wake(ctx); /* watches may be gone with the session */
}

int zkr_observer_new(zkr_observer_t **out, zkr_client_t *c, const char *path, zkr_election_kind_t kind,
                     zkr_observe_fn fn, void *ctx)
{
    if (out)
        *out = NULL;
    const zkr__driver_t *drv = zkr__election_driver(kind);
    if (!out || !c || !fn || !drv || !zkr__path_valid(path))
        return ZKR_EINVAL;
    zkr_observer_t *o = calloc(1, sizeof *o);
    if (!o || !(o->path = strdup(path))) {
        free(o);
        return ZKR_ENOMEM;
    }
    o->drv = drv;
    o->fn = fn;
    o->ctx = ctx;
    if (pthread_mutex_init(&o->mu, NULL) != 0 || zkr__cond_init(&o->cond) != 0) {
        free(o->path);
        free(o);
        return ZKR_ESYSTEM;
    }
    int rc = zkr__client_retain(c);
    if (rc == ZKR_OK) {
        o->c = c;
        rc = zkr__sub_add(c, on_event, o, &o->sub);
    }
    if (rc == ZKR_OK && (rc = zkr_client_add_listener(c, on_state, o)) == ZKR_OK)
        o->listening = 1;
    if (rc == ZKR_OK && pthread_create(&o->thread, NULL, observe_main, o) != 0)
        rc = ZKR_ESYSTEM;
    if (rc != ZKR_OK) {
        if (o->listening)
            zkr_client_remove_listener(c, on_state, o);
        if (o->sub)
            zkr__sub_remove(c, o->sub);
        if (o->c)
            zkr__client_release(c);
        pthread_cond_destroy(&o->cond);
        pthread_mutex_destroy(&o->mu);
        free(o->path);
        free(o);
        return rc;
    }
    *out = o;
    return ZKR_OK;
}

void zkr_observer_free(zkr_observer_t *o)
{
    if (!o)
        return;
    pthread_mutex_lock(&o->mu);
    o->stop = 1;
    pthread_cond_broadcast(&o->cond);
    pthread_mutex_unlock(&o->mu);
    pthread_join(o->thread, NULL);
    zkr_client_remove_listener(o->c, on_state, o);
    zkr__sub_remove(o->c, o->sub);
    while (o->head) {
        change_t *ch = o->head;
        o->head = ch->next;
        zkr_participants_free(ch->leader, ch->leader ? 1 : 0);
        free(ch);
    }
    free(o->last.node_path);
    free(o->last.id);
    zkr__client_release(o->c);
    pthread_cond_destroy(&o->cond);
    pthread_mutex_destroy(&o->mu);
    free(o->path);
    free(o);
}

/* config_watch: a service that keeps its configuration in ZooKeeper and
 * reloads it when it changes (zkr_cache_t, Curator's TreeCache).
 *
 *   config_watch [HOSTS] [--path /myservice/config] [--seconds S]
 *                [--session-ms T] [--demo]
 *   config_watch --help
 *
 * HOSTS defaults to $ZKR_HOSTS, then 127.0.0.1:2181.  The configuration is
 * one node per setting, the key its name and the value its data:
 *
 *   <path>/port     "8080"
 *   <path>/mode     "fast"
 *
 * The service caches <path> and its children (a ZKR_CACHE_TREE cache of
 * depth 1: the path may not exist yet, and may be deleted and made again),
 * waits until the copy is loaded (ZKR_CACHE_INITIALIZED), applies the
 * configuration ("config: mode=fast port=8080"), then applies it again
 * after every change of a setting: one "change: CHANGED mode=safe" line per
 * event, then "reload: mode=safe port=8080".
 *
 * The cache's listener runs on the client's callback thread: it only
 * queues what it is told (the event's node is valid during the call only)
 * and wakes the main thread, which prints and applies.  The configuration
 * applied is always read from the copy (zkr_cache_walk: one consistent
 * state of it), never pieced together from events.
 *
 * While the connection is down the copy may be stale: the service keeps
 * the last configuration but says so ("configuration may be stale") when
 * the connection is SUSPENDED, and says when zkr_cache_is_fresh is 1 again
 * ("configuration is current again"): a service that must not act on an
 * old setting (a leader address, a feature switched off) holds back in
 * between.
 *
 * It stops on SIGINT or SIGTERM, or after --seconds S.  --demo makes the
 * configuration itself first, then changes it three times (a changed, a
 * new and a deleted setting) and stops.  The last line is "CHECK PASSED:
 * ..." (exit 0: loaded, every change applied, stopped cleanly; with
 * --demo, the configuration applied last is the one written last) or
 * "CHECK FAILED: ..." (exit 1). */
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <zookeeper/zookeeper.h>
#include <zkr/zkr.h>
#include <zkr/cache.h>

#include "exdata.h"

#define PROG "config_watch"
#define LOAD_TIMEOUT_MS 30000
#define DEMO_FINAL "debug=on mode=safe"

static const char *hosts;
static const char *base = "/myservice/config";
static int seconds;    /* 0: until a signal */
static int session_ms; /* 0: the client's default */
static int demo;

static volatile sig_atomic_t stop_signal;

/* ---- what the listener hands over ------------------------------------------------ */

typedef struct note {
    struct note *next;
    zkr_cache_event_type_t type;
    zkr_state_t state;
    char *key;   /* node events: the setting ("" for the path itself) */
    char *value; /* CREATED, CHANGED: its value (a copy) */
    size_t value_len;
} note_t;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static note_t *head, **tail = &head;
static atomic_int lost_notes; /* out of memory in the listener */

/* The setting a path names: "" for the path itself, the child's name for
 * a child of it. */
static const char *key_of(const char *path)
{
    size_t n = strlen(base);
    return strncmp(path, base, n) == 0 && path[n] == '/' ? path + n + 1 : "";
}

/* The listener: a copy of the event, queued for the main thread. */
static void on_event(zkr_cache_t *cache, const zkr_cache_event_t *ev, void *ctx)
{
    (void)cache, (void)ctx;
    note_t *n = calloc(1, sizeof *n);
    if (n && ev->node) {
        n->key = strdup(key_of(ev->node->path));
        if (ev->node->data && (n->value = malloc(ev->node->data_len + 1)) != NULL) {
            memcpy(n->value, ev->node->data, ev->node->data_len + 1);
            n->value_len = ev->node->data_len;
        }
        if (!n->key || (ev->node->data && !n->value)) {
            free(n->key);
            free(n->value);
            free(n);
            n = NULL;
        }
    }
    if (!n) {
        atomic_fetch_add(&lost_notes, 1);
        return;
    }
    n->type = ev->type;
    n->state = ev->state;
    pthread_mutex_lock(&mu);
    *tail = n;
    tail = &n->next;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
}

static void free_notes(note_t *n)
{
    while (n) {
        note_t *next = n->next;
        free(n->key);
        free(n->value);
        free(n);
        n = next;
    }
}

/* ---- applying the configuration ------------------------------------------------------ */

/* A value as one word: controls, spaces, backslashes and bytes outside
 * ASCII as \xNN. */
static void put_value(FILE *f, const char *v, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char b = (unsigned char)v[i];
        if (b <= 0x20 || b >= 0x7f || b == '\\')
            fprintf(f, "\\x%02x", b);
        else
            fputc(b, f);
    }
}

/* zkr_cache_walk's function: "key=value" for each setting (depth 1),
 * siblings in name order.  Short, and never calls the cache. */
static int add_setting(const zkr_cache_node_t *node, int depth, void *ctx)
{
    FILE *f = ctx;
    if (depth != 1)
        return 0;
    fprintf(f, " %s=", key_of(node->path));
    put_value(f, node->data ? node->data : "", node->data_len);
    return 0;
}

/* The configuration in the copy, "key=value key=value" (malloc'd), or
 * NULL. */
static char *current_config(zkr_cache_t *cache)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    int rc = zkr_cache_walk(cache, NULL, add_setting, f);
    fclose(f);
    if (rc != ZKR_OK && rc != ZKR_ENONODE) { /* ENONODE: no path, no settings */
        fprintf(stderr, PROG ": zkr_cache_walk: %s\n", zkr_strerror(rc));
        free(text);
        return NULL;
    }
    if (text && text[0] == ' ') /* the words' leading space */
        memmove(text, text + 1, strlen(text));
    return text;
}

/* Apply the configuration (here: print it): "<what>: key=value ...". */
static int apply(zkr_cache_t *cache, const char *what, char **last)
{
    char *cfg = current_config(cache);
    if (!cfg)
        return -1;
    printf("%s: %s\n", what, cfg[0] ? cfg : "(no settings)");
    free(*last);
    *last = cfg;
    return 0;
}

/* ---- --demo: the configuration made and changed on the client's session -------------- */

typedef struct edit {
    const char *key, *value; /* value NULL: delete */
    int create;
} edit_t;

static int edit_fn(zhandle_t *zh, int64_t session_id, void *ctx)
{
    (void)session_id;
    const edit_t *e = ctx;
    char path[600];
    snprintf(path, sizeof path, "%s/%s", base, e->key);
    int zrc;
    if (!e->value)
        zrc = zoo_delete(zh, path, -1);
    else if (e->create)
        zrc = ex_create_path(zh, path, e->value);
    else
        zrc = zoo_set(zh, path, e->value, (int)strlen(e->value), -1);
    if (zrc != ZOK)
        fprintf(stderr, PROG ": --demo: %s %s: %s\n", e->value ? "write" : "delete", path, zerror(zrc));
    return zrc == ZOK ? ZKR_OK : ZKR_EZOOKEEPER;
}

static int demo_edit(zkr_client_t *c, const char *key, const char *value, int create)
{
    edit_t e = {key, value, create};
    return zkr_client_with_handle(c, edit_fn, &e) == ZKR_OK ? 0 : -1;
}

/* Before the cache starts: a fresh configuration of two settings. */
static int demo_setup(zkr_client_t *c)
{
    if (zkr_client_with_handle(c, ex_delete_tree_fn, (void *)base) != ZKR_OK)
        return -1;
    return demo_edit(c, "port", "8080", 1) == 0 && demo_edit(c, "mode", "fast", 1) == 0 ? 0 : -1;
}

/* The three changes, one at each call (step 0, 1, 2); 1 when done. */
static int demo_step(zkr_client_t *c, int step, int *errors)
{
    static const edit_t steps[] = {{"mode", "safe", 0}, {"debug", "on", 1}, {"port", NULL, 0}};
    if (step >= 3)
        return 1;
    if (demo_edit(c, steps[step].key, steps[step].value, steps[step].create) != 0)
        ++*errors;
    return 0;
}

/* ---- main ------------------------------------------------------------------------------- */

static void on_signal(int sig)
{
    stop_signal = sig;
}

/* Wait at most ms for notes; take them all (NULL if none). */
static note_t *take_notes(int ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&mu);
    while (!head && !stop_signal && pthread_cond_timedwait(&cv, &mu, &until) == 0) {
    }
    note_t *n = head;
    head = NULL;
    tail = &head;
    pthread_mutex_unlock(&mu);
    return n;
}

/* Print what the notes say; 1 if a setting (or the path) changed.  The
 * first load's events (up to its INITIALIZED, which the listener may be
 * told after zkr_cache_wait_initialized returned) are not changes: the
 * configuration applied first was read from the copy they made. */
static int tell(const note_t *n, int *initialized_again)
{
    static int loading = 1;
    int changed = 0;
    for (; n; n = n->next) {
        if (loading) {
            loading = n->type != ZKR_CACHE_INITIALIZED;
            continue;
        }
        switch (n->type) {
        case ZKR_CACHE_CREATED:
        case ZKR_CACHE_CHANGED:
        case ZKR_CACHE_DELETED:
            changed = 1;
            if (!n->key[0]) { /* the path itself */
                printf("change: %s %s (the configuration's node)\n", zkr_cache_event_name(n->type), base);
                break;
            }
            printf("change: %s %s", zkr_cache_event_name(n->type), n->key);
            if (n->type != ZKR_CACHE_DELETED) {
                putchar('=');
                put_value(stdout, n->value ? n->value : "", n->value_len);
            }
            putchar('\n');
            break;
        case ZKR_CACHE_STATE:
            if (n->state == ZKR_STATE_SUSPENDED)
                printf("connection SUSPENDED: configuration may be stale (kept, not trusted)\n");
            else
                printf("connection %s\n", zkr_state_name(n->state));
            break;
        case ZKR_CACHE_INITIALIZED:
            /* after a lost session: the copy was read again, and only
             * what differs was told */
            *initialized_again = 1;
            changed = 1;
            break;
        }
    }
    return changed;
}

static const char usage_text[] =
    "usage: config_watch [HOSTS] [--path PATH] [--seconds S] [--session-ms T] [--demo]\n"
    "\n"
    "Keep a service's configuration (one node per setting under PATH: the key is\n"
    "the node's name, the value its data) in a local copy (zkr_cache_t), apply it\n"
    "once loaded and again after every change, and say when it may be stale.\n"
    "Stops on SIGINT or SIGTERM, or after S seconds.\n"
    "\n"
    "  HOSTS               ZooKeeper connection string (default $ZKR_HOSTS, then\n"
    "                      127.0.0.1:2181)\n"
    "  -P, --path PATH     the configuration (default /myservice/config)\n"
    "  -s, --seconds S     stop after S seconds, 0..86400 (default 0: on a signal)\n"
    "  -t, --session-ms T  the session timeout, 1000..60000 (default 15000)\n"
    "  -d, --demo          make PATH with two settings, change it three times, stop\n"
    "                      (PATH is deleted first, and at the end)\n"
    "  -h, --help          this text\n";

static int parse_args(int argc, char **argv)
{
    static const struct option opts[] = {
        {"path", required_argument, NULL, 'P'},       {"seconds", required_argument, NULL, 's'},
        {"session-ms", required_argument, NULL, 't'}, {"demo", no_argument, NULL, 'd'},
        {"help", no_argument, NULL, 'h'},             {NULL, 0, NULL, 0},
    };
    int o, bad = 0;
    while (!bad && (o = getopt_long(argc, argv, "P:s:t:dh", opts, NULL)) != -1) {
        switch (o) {
        case 'P': base = optarg; break;
        case 's': bad = ex_int_arg(PROG, "seconds", optarg, 0, 86400, &seconds); break;
        case 't': bad = ex_int_arg(PROG, "session-ms", optarg, 1000, 60000, &session_ms); break;
        case 'd': demo = 1; break;
        case 'h': return ex_usage(usage_text, 1);
        default: bad = -1; break;
        }
    }
    if (!bad && (strlen(base) < 2 || base[strlen(base) - 1] == '/')) {
        fprintf(stderr, PROG ": --path must be a node below /, without a trailing /\n");
        bad = -1;
    }
    return ex_args_done(bad, argc, argv, &hosts, base, 400, usage_text);
}

static zkr_client_t *open_client(void)
{
    zkr_client_options_t opt;
    zkr_client_options_init(&opt);
    opt.zk_log_level = 0;
    opt.session_timeout_ms = session_ms;
    zkr_client_t *c = NULL;
    int rc = zkr_client_open(&c, hosts, &opt);
    if (rc != ZKR_OK) {
        fprintf(stderr, PROG ": zkr_client_open %s: %s\n", hosts, zkr_strerror(rc));
        return NULL;
    }
    return c;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (parse_args(argc, argv) != 0)
        return 2;
    ex_on_stop_signals(on_signal);

    printf(PROG ": %s, configuration under %s%s\n", hosts, base, demo ? " (--demo)" : "");
    zoo_set_debug_level(0); /* keep the ZooKeeper client's log quiet */
    zkr_client_t *c = open_client();
    if (!c)
        return ex_check(0, "connect");
    if (demo && demo_setup(c) != 0) {
        zkr_client_close(c);
        return ex_check(0, "--demo: set-up");
    }

    /* The path and its children: the settings. */
    zkr_cache_options_t opt;
    zkr_cache_options_init(&opt);
    opt.shape = ZKR_CACHE_TREE;
    opt.max_depth = 1;
    zkr_cache_t *cache = NULL;
    int rc = zkr_cache_new(&cache, c, base, &opt);
    if (rc == ZKR_OK)
        rc = zkr_cache_set_listener(cache, on_event, NULL); /* before the start: told every event */
    if (rc == ZKR_OK)
        rc = zkr_cache_start(cache);
    /* the first load, a signal noticed within a second */
    int64_t load_end = ex_now_ms() + LOAD_TIMEOUT_MS;
    while (rc == ZKR_OK && (rc = zkr_cache_wait_initialized(cache, 1000)) == ZKR_ETIMEDOUT && !stop_signal &&
           ex_now_ms() < load_end) {
    }
    if (rc != ZKR_OK) {
        fprintf(stderr, PROG ": cannot load %s: %s\n", base, stop_signal ? "interrupted" : zkr_strerror(rc));
        zkr_cache_free(cache);
        zkr_client_close(c);
        free_notes(take_notes(0));
        return ex_check(0, "load the configuration");
    }
    char *applied = NULL;
    int errors = apply(cache, "config", &applied) != 0;
    int reloads = 0, fresh = 1, step = 0, demo_done = 0;
    int64_t end = seconds > 0 ? ex_now_ms() + (int64_t)seconds * 1000 : -1;
    int64_t next_step = ex_now_ms() + 300;
    while (!stop_signal && (end < 0 || ex_now_ms() < end) && !demo_done) {
        note_t *notes = take_notes(100);
        int again = 0;
        if (tell(notes, &again)) {
            errors += apply(cache, again ? "reload (read again after a new session)" : "reload", &applied) != 0;
            reloads++;
        }
        free_notes(notes);
        /* acting on a stale copy is the danger: say when it is current */
        int now_fresh = zkr_cache_is_fresh(cache);
        if (now_fresh != fresh)
            printf(now_fresh ? "configuration is current again\n" : "configuration may be stale\n");
        fresh = now_fresh;
        if (demo && ex_now_ms() >= next_step) {
            /* a change every 300 ms; then wait until the last is applied */
            demo_done = step >= 3 && applied && strcmp(applied, DEMO_FINAL) == 0;
            if (step < 3 && demo_step(c, step++, &errors) == 0)
                next_step = ex_now_ms() + 300;
            if (step >= 3 && ex_now_ms() > next_step + 10000) {
                fprintf(stderr, PROG ": --demo: the last change was not applied within 10 s\n");
                errors++;
                demo_done = 1;
            }
        }
    }
    if (stop_signal)
        printf(PROG ": %s: stopping\n", stop_signal == SIGINT ? "SIGINT" : "SIGTERM");

    /* After zkr_cache_free the listener does not run and will not run. */
    zkr_cache_free(cache);
    if (demo)
        zkr_client_with_handle(c, ex_delete_tree_fn, (void *)base);
    zkr_client_close(c);
    free_notes(take_notes(0));
    errors += atomic_load(&lost_notes);

    int ok = errors == 0 && (!demo || (applied && strcmp(applied, DEMO_FINAL) == 0));
    char what[600];
    snprintf(what, sizeof what, "configuration loaded, %d reload(s), last applied: %s%s", reloads,
             applied && applied[0] ? applied : "(no settings)", demo ? " (--demo wants " DEMO_FINAL ")" : "");
    free(applied);
    return ex_check(ok, what);
}

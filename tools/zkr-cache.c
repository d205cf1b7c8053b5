/* zkr-cache: print a ZooKeeper node, its children or a subtree, then every
 * change as it happens (a zkr_cache_t: Curator's NodeCache,
 * PathChildrenCache, TreeCache).
 *
 *   zkr-cache [options] PATH
 *
 * The main thread does all the printing: it connects, starts the cache,
 * waits for the first load, prints the copy (zkr_cache_walk: one
 * consistent state of it, parents before children, siblings in name
 * order; formatted in memory first, as the walk holds the copy's lock),
 * then prints the events the cache's listener queued, one line each,
 * flushed.
 *
 * The listing and the events overlap: the copy walked may already hold
 * changes whose events come after it.  So the tool keeps, for each node it
 * has shown, the czxid and mzxid shown, and skips an event that would show
 * something older or the same again (a CHANGED already listed, the DELETED
 * of an incarnation never shown): the output is one history, each node's
 * lines in the server's order.  See zkr-cache.1 for the user's side. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zookeeper/zookeeper.h>
#include <zkr/zkr.h>
#include <zkr/cache.h>

#include "tools/zkrt.h"

#define SLICE_MS 200 /* longest wait before looking for a signal */

/* Exit codes (as zkr-lock's; documented in --help and zkr-cache.1). */
enum {
    ZKRC_EX_USAGE = 64,       /* bad usage, a --chroot that does not exist */
    ZKRC_EX_UNAVAILABLE = 69, /* cannot connect */
    ZKRC_EX_SOFTWARE = 70,    /* internal error, output cannot be written */
    ZKRC_EX_TEMPFAIL = 75,    /* the first load not done within --timeout */
    ZKRC_EX_NOPERM = 77       /* authentication refused */
};

/* ---- options ---------------------------------------------------------------------- */

typedef struct opts {
    const char *hosts;
    const char *chroot;
    char *auth_scheme, *auth_data; /* malloc'd or NULL; never printed */
    int session_timeout_ms;
    int64_t connect_timeout_ms;
    int64_t timeout_ms; /* the first load; < 0: forever */
    zkr_cache_shape_t shape;
    int depth;          /* --depth; -1: no limit */
    int stat;           /* --stat: no data */
    int once;
    int quiet;
    const char *path;
} opts_t;

static int quiet;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    if (quiet)
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "zkr-cache: %s\n", line);
}

/* A usage error: one line on stderr, even with --quiet. */
static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "zkr-cache: %s (see zkr-cache --help)\n", line);
    return ZKRC_EX_USAGE;
}

static const char usage_text[] =
    "Usage: zkr-cache [options] PATH\n"
    "\n"
    "Print the nodes at and below PATH, one line each (PATH DATA), then every\n"
    "change as it happens, one line each, like inotifywait -m:\n"
    "  CREATED PATH DATA, CHANGED PATH DATA, DELETED PATH, INITIALIZED,\n"
    "  STATE SUSPENDED|RECONNECTED|LOST|READ_ONLY\n"
    "from a local copy kept by watches (Curator's TreeCache, PathChildrenCache,\n"
    "NodeCache).  Bytes that could act on a terminal or break a line (controls,\n"
    "C1 controls, backslashes, bytes that are not UTF-8; spaces in paths) are\n"
    "printed as \\xNN.  PATH may not exist yet.\n"
    "\n"
    "Connection:\n"
    "  -H, --hosts HOSTS          ZooKeeper hosts \"h1:2181,h2:2181\" (default $ZKR_HOSTS,\n"
    "                             then 127.0.0.1:2181)\n"
    "  -s, --server HOSTS         the same as --hosts\n"
    "      --session-timeout MS   requested session timeout, 1000 to 600000\n"
    "                             (default 15000)\n"
    "      --connect-timeout SECONDS  give up connecting after this (default 15)\n"
    "      --chroot PATH          every path is relative to PATH\n"
    "      --auth SCHEME:CREDENTIALS  authenticate (default $ZKR_AUTH); prefer the\n"
    "                             environment: arguments are visible to other users\n"
    "What is cached (default: PATH and every node below it):\n"
    "  -d, --depth N              PATH and N levels below it (0: PATH only)\n"
    "  -c, --children             the children of PATH, not PATH itself\n"
    "  -n, --node                 PATH only\n"
    "      --stat                 no data: print each node's stat (czxid, mzxid,\n"
    "                             version, length, children, owner), as read when\n"
    "                             the node appeared; fewer watches, no CHANGED\n"
    "Output:\n"
    "  -1, --once                 print the nodes once loaded, and exit\n"
    "  -t, --timeout SECONDS      give up if the first load takes longer\n"
    "                             (default: wait for ever)\n"
    "  -q, --quiet                no messages of zkr-cache's own, except usage errors\n"
    "  -h, --help                 this help\n"
    "  -V, --version              the version\n"
    "\n"
    "It runs until SIGINT, SIGTERM or SIGHUP (exit 0), or with --once until the\n"
    "nodes are printed.\n"
    "\n"
    "Exit status:\n"
    "  0     the nodes were printed (--once), or stopped by a signal after that\n"
    "  64    bad usage (a --chroot that does not exist included)\n"
    "  69    cannot connect to ZooKeeper\n"
    "  70    internal error, or the output cannot be written\n"
    "  75    the first load was not done within --timeout\n"
    "  77    authentication refused\n"
    "  128+N stopped by signal N before the nodes were printed\n";

static int set_auth(opts_t *o, const char *spec, const char *where)
{
    const char *colon = strchr(spec, ':');
    if (!colon || colon == spec || colon[1] == '\0')
        return usage_error("%s must be SCHEME:CREDENTIALS", where);
    free(o->auth_scheme);
    free(o->auth_data);
    o->auth_scheme = strndup(spec, (size_t)(colon - spec));
    o->auth_data = strdup(colon + 1);
    if (!o->auth_scheme || !o->auth_data) {
        fprintf(stderr, "zkr-cache: out of memory\n");
        return ZKRC_EX_SOFTWARE;
    }
    return -1;
}

static void opts_free(opts_t *o)
{
    if (o->auth_data)
        memset(o->auth_data, 0, strlen(o->auth_data));
    free(o->auth_scheme);
    free(o->auth_data);
    o->auth_scheme = o->auth_data = NULL;
}

enum { OPT_SESSION = 256, OPT_CONNECT, OPT_CHROOT, OPT_AUTH, OPT_STAT };

static const struct option longopts[] = {
    {"hosts", required_argument, NULL, 'H'},
    {"server", required_argument, NULL, 's'},
    {"session-timeout", required_argument, NULL, OPT_SESSION},
    {"connect-timeout", required_argument, NULL, OPT_CONNECT},
    {"chroot", required_argument, NULL, OPT_CHROOT},
    {"auth", required_argument, NULL, OPT_AUTH},
    {"depth", required_argument, NULL, 'd'},
    {"children", no_argument, NULL, 'c'},
    {"node", no_argument, NULL, 'n'},
    {"stat", no_argument, NULL, OPT_STAT},
    {"once", no_argument, NULL, '1'},
    {"timeout", required_argument, NULL, 't'},
    {"quiet", no_argument, NULL, 'q'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0},
};

/* One option; -1 to go on, else an exit code. */
static int one_option(opts_t *o, int c, char *arg, int *shapes)
{
    switch (c) {
    case 'H':
    case 's':
        if (!*arg)
            return usage_error("%s needs a connection string", c == 'H' ? "--hosts" : "--server");
        o->hosts = arg;
        return -1;
    case OPT_SESSION:
        if (zkrt_parse_int(arg, ZKR_SESSION_TIMEOUT_MIN_MS, ZKR_SESSION_TIMEOUT_MAX_MS, &o->session_timeout_ms) != 0)
            return usage_error("--session-timeout needs milliseconds from %d to %d: '%s'", ZKR_SESSION_TIMEOUT_MIN_MS,
                               ZKR_SESSION_TIMEOUT_MAX_MS, arg);
        return -1;
    case OPT_CONNECT:
        if ((o->connect_timeout_ms = zkrt_parse_seconds(arg)) < 0)
            return usage_error("--connect-timeout needs seconds, 0 or more: '%s'", arg);
        return -1;
    case OPT_CHROOT:
        if (!zkrt_path_ok(arg))
            return usage_error("--chroot needs an absolute ZooKeeper path: '%s'", arg);
        o->chroot = arg;
        return -1;
    case OPT_AUTH: {
        int rc = set_auth(o, arg, "--auth");
        memset(arg, 0, strlen(arg)); /* out of /proc/PID/cmdline from now on */
        return rc;
    }
    case 'd':
        if (zkrt_parse_int(arg, 0, 1000000, &o->depth) != 0)
            return usage_error("--depth needs a number of levels, 0 or more: '%s'", arg);
        return -1;
    case 'c': o->shape = ZKR_CACHE_CHILDREN; ++*shapes; return -1;
    case 'n': o->shape = ZKR_CACHE_NODE; ++*shapes; return -1;
    case OPT_STAT: o->stat = 1; return -1;
    case '1': o->once = 1; return -1;
    case 't':
        if ((o->timeout_ms = zkrt_parse_seconds(arg)) < 0)
            return usage_error("--timeout needs seconds, 0 or more: '%s'", arg);
        return -1;
    case 'q': o->quiet = 1; return -1;
    case 'h':
        fputs(usage_text, stdout);
        return fflush(stdout) == 0 ? 0 : ZKRC_EX_SOFTWARE;
    case 'V':
        printf("zkr-cache (zkrecipes) %s\n", zkr_version());
        return fflush(stdout) == 0 ? 0 : ZKRC_EX_SOFTWARE;
    default:
        return ZKRC_EX_USAGE;
    }
}

/* Parse the command line: -1 to go on, else the exit code. */
static int parse(opts_t *o, int argc, char **argv)
{
    memset(o, 0, sizeof *o);
    const char *env = getenv("ZKR_HOSTS");
    o->hosts = env && *env ? env : "127.0.0.1:2181";
    o->session_timeout_ms = 15000;
    o->connect_timeout_ms = 15000;
    o->timeout_ms = -1;
    o->shape = ZKR_CACHE_TREE;
    o->depth = -1;
    env = getenv("ZKR_AUTH");
    if (env && *env) {
        int rc = set_auth(o, env, "ZKR_AUTH");
        if (rc >= 0)
            return rc;
    }
    int c, shapes = 0;
    opterr = 0; /* our own one-line messages */
    while ((c = getopt_long(argc, argv, "+:H:s:d:cn1t:qhV", longopts, NULL)) != -1) {
        if (c == '?') {
            if (optopt)
                return usage_error("unknown option -%c", optopt);
            return usage_error("unknown option %s", argv[optind - 1]);
        }
        if (c == ':')
            return usage_error("option %s needs a value", argv[optind - 1]);
        int rc = one_option(o, c, optarg, &shapes);
        if (rc >= 0)
            return rc;
    }
    if (shapes > 1)
        return usage_error("choose one of --children and --node");
    if (o->depth >= 0 && o->shape != ZKR_CACHE_TREE)
        return usage_error("--depth goes with a subtree, not with --children or --node");
    if (optind >= argc)
        return usage_error("no PATH given");
    o->path = argv[optind++];
    if (strcmp(o->path, "/") != 0 && !zkrt_path_ok(o->path))
        return usage_error("PATH must be an absolute ZooKeeper path like /config: '%s'", o->path);
    if (optind < argc)
        return usage_error("one PATH only: '%s'", argv[optind]);
    return -1;
}

/* ---- what the listener hands over ------------------------------------------------ */

typedef struct note {
    struct note *next;
    zkr_cache_event_type_t type;
    zkr_state_t state;
    zkr_cache_node_t node; /* node events: a copy (path and data malloc'd) */
} note_t;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static note_t *head, **tail = &head;
static int lost_notes; /* out of memory in the listener (under mu) */
static int wake[2] = {-1, -1}; /* the listener and the signal handler write, main polls */
static volatile sig_atomic_t stop_signal;

static void poke(void)
{
    char b = 1;
    ssize_t r = write(wake[1], &b, 1); /* full: main is awake anyway */
    (void)r;
}

static void on_signal(int sig)
{
    stop_signal = sig;
    int saved = errno;
    poke();
    errno = saved;
}

static void note_free(note_t *n)
{
    while (n) {
        note_t *next = n->next;
        free((char *)n->node.path);
        free((char *)n->node.data);
        free(n);
        n = next;
    }
}

/* The listener (the client's callback thread): a copy, queued. */
static void on_event(zkr_cache_t *cache, const zkr_cache_event_t *ev, void *ctx)
{
    (void)cache, (void)ctx;
    note_t *n = calloc(1, sizeof *n);
    if (n && ev->node) {
        n->node = *ev->node;
        n->node.path = strdup(ev->node->path);
        n->node.data = NULL;
        char *data = ev->node->data ? malloc(ev->node->data_len + 1) : NULL;
        if (data) {
            memcpy(data, ev->node->data, ev->node->data_len);
            data[ev->node->data_len] = '\0';
            n->node.data = data;
        }
        if (!n->node.path || (ev->node->data && !data)) {
            note_free(n);
            n = NULL;
        }
    }
    pthread_mutex_lock(&mu);
    if (n) {
        n->type = ev->type;
        n->state = ev->state;
        *tail = n;
        tail = &n->next;
    } else {
        lost_notes++;
    }
    pthread_mutex_unlock(&mu);
    poke();
}

static note_t *take_notes(int *lost)
{
    pthread_mutex_lock(&mu);
    note_t *n = head;
    head = NULL;
    tail = &head;
    *lost = lost_notes;
    lost_notes = 0;
    pthread_mutex_unlock(&mu);
    return n;
}

/* ---- what has been shown: path -> czxid, mzxid ----------------------------------- */

typedef struct shown {
    struct shown *next;
    int64_t czxid, mzxid;
    char path[];
} shown_t;

typedef struct shown_set {
    shown_t **b;
    size_t nb, count;
} shown_set_t;

static size_t hash(const char *s)
{
    size_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static shown_t **shown_find(shown_set_t *s, const char *path)
{
    if (!s->nb)
        return NULL;
    shown_t **p = &s->b[hash(path) % s->nb];
    while (*p && strcmp((*p)->path, path) != 0)
        p = &(*p)->next;
    return p;
}

static int shown_put(shown_set_t *s, const char *path, const zkr_stat_t *st)
{
    if (s->count >= s->nb) { /* grow: twice the buckets */
        size_t nb = s->nb ? s->nb * 2 : 256;
        shown_t **b = calloc(nb, sizeof *b);
        if (!b)
            return -1;
        for (size_t i = 0; i < s->nb; i++) {
            for (shown_t *e = s->b[i], *next; e; e = next) {
                next = e->next;
                size_t k = hash(e->path) % nb;
                e->next = b[k];
                b[k] = e;
            }
        }
        free(s->b);
        s->b = b;
        s->nb = nb;
    }
    shown_t **p = shown_find(s, path);
    if (!*p) {
        size_t len = strlen(path) + 1;
        if (!(*p = calloc(1, sizeof **p + len)))
            return -1;
        memcpy((*p)->path, path, len);
        s->count++;
    }
    (*p)->czxid = st->czxid;
    (*p)->mzxid = st->mzxid;
    return 0;
}

static void shown_remove(shown_set_t *s, shown_t **p)
{
    shown_t *e = *p;
    *p = e->next;
    free(e);
    s->count--;
}

static void shown_free(shown_set_t *s)
{
    for (size_t i = 0; i < s->nb; i++) {
        for (shown_t *e = s->b[i], *next; e; e = next) {
            next = e->next;
            free(e);
        }
    }
    free(s->b);
    memset(s, 0, sizeof *s);
}

/* ---- printing ------------------------------------------------------------------------ */

typedef struct tool {
    opts_t o;
    zkr_client_t *c;
    zkr_cache_t *cache;
    shown_set_t shown;
    int out_error; /* the output could not be written */
    int mem_error;
} tool_t;

/* One node to f: PATH (spaces escaped), then its data or its stat. */
static void put_node(FILE *f, const tool_t *t, const zkr_cache_node_t *n, int with_data)
{
    zkrt_put_escaped(f, n->path, strlen(n->path), 1);
    if (!with_data)
        return;
    if (t->o.stat || !n->data) {
        const zkr_stat_t *st = &n->stat;
        fprintf(f,
                " czxid=%" PRId64 " mzxid=%" PRId64 " version=%" PRId32 " length=%" PRId32 " children=%" PRId32
                " owner=0x%" PRIx64,
                st->czxid, st->mzxid, st->version, st->data_length, st->num_children, (uint64_t)st->ephemeral_owner);
    } else if (n->data_len > 0) {
        fputc(' ', f);
        zkrt_put_escaped(f, n->data, n->data_len, 0);
    }
}

static void end_line(tool_t *t)
{
    putchar('\n');
    if (fflush(stdout) != 0)
        t->out_error = 1;
}

typedef struct walk {
    tool_t *t;
    FILE *f; /* the listing, in memory */
} walk_t;

/* zkr_cache_walk's function, called under the copy's lock: format into
 * memory and remember (never blocks on the output, never calls the
 * cache). */
static int list_one(const zkr_cache_node_t *n, int depth, void *ctx)
{
    (void)depth;
    walk_t *w = ctx;
    put_node(w->f, w->t, n, 1);
    fputc('\n', w->f);
    if (!w->t->o.once && shown_put(&w->t->shown, n->path, &n->stat) != 0)
        w->t->mem_error = 1;
    return w->t->mem_error;
}

/* The copy, one line per node (with ZKR_CACHE_CHILDREN the walk leaves
 * the path itself out).  0, or an exit code. */
static int list_all(tool_t *t)
{
    char *text = NULL;
    size_t len = 0;
    walk_t w = {t, open_memstream(&text, &len)};
    if (!w.f) {
        say("out of memory");
        return ZKRC_EX_SOFTWARE;
    }
    int rc = zkr_cache_walk(t->cache, NULL, list_one, &w);
    if (fclose(w.f) != 0)
        t->mem_error = 1;
    if (rc != ZKR_OK && rc != ZKR_ENONODE) { /* ENONODE: nothing there, nothing to print */
        say("cannot read the copy of %s: %s", t->o.path, zkr_strerror(rc));
        free(text);
        return ZKRC_EX_SOFTWARE;
    }
    if (t->mem_error) {
        say("out of memory");
        free(text);
        return ZKRC_EX_SOFTWARE;
    }
    if ((len > 0 && fwrite(text, 1, len, stdout) != len) || fflush(stdout) != 0)
        t->out_error = 1;
    free(text);
    return 0;
}

/* One queued event, unless it shows nothing new (see the top of the file). */
static void tell(tool_t *t, const note_t *n)
{
    const zkr_cache_node_t *node = &n->node;
    shown_t **p = NULL;
    switch (n->type) {
    case ZKR_CACHE_CREATED:
    case ZKR_CACHE_CHANGED:
        p = shown_find(&t->shown, node->path);
        if (p && *p) {
            if (node->stat.czxid < (*p)->czxid) /* an earlier incarnation */
                return;
            if (node->stat.czxid == (*p)->czxid && node->stat.mzxid <= (*p)->mzxid) /* shown already */
                return;
        } else if (n->type == ZKR_CACHE_CHANGED) {
            return; /* a node deleted before the listing: its DELETED is skipped too */
        }
        if (shown_put(&t->shown, node->path, &node->stat) != 0)
            t->mem_error = 1;
        printf("%s ", zkr_cache_event_name(n->type));
        put_node(stdout, t, node, 1);
        break;
    case ZKR_CACHE_DELETED:
        p = shown_find(&t->shown, node->path);
        if (!p || !*p || (*p)->czxid != node->stat.czxid)
            return; /* never shown, or not this incarnation */
        shown_remove(&t->shown, p);
        printf("DELETED ");
        put_node(stdout, t, node, 0);
        break;
    case ZKR_CACHE_INITIALIZED:
        printf("INITIALIZED");
        break;
    case ZKR_CACHE_STATE:
        printf("STATE %s", zkr_state_name(n->state));
        break;
    default:
        printf("%s", zkr_cache_event_name(n->type));
        break;
    }
    end_line(t);
}

/* ---- connecting, loading, following ---------------------------------------------------- */

/* The library's log lines (a node left out of the copy because its ACL
 * refuses the read, a session rebuilt, ...) as lines of our own: any
 * thread, short, one write. */
static void on_log(zkr_client_t *c, int level, const char *source, const char *message, void *ctx)
{
    (void)c, (void)level, (void)source, (void)ctx;
    fprintf(stderr, "zkr-cache: %s\n", message);
}

static int exit_for(int rc)
{
    switch (rc) {
    case ZKR_ENOAUTH: return ZKRC_EX_NOPERM;
    case ZKR_EINVAL: return ZKRC_EX_USAGE;
    case ZKR_ENONODE: return ZKRC_EX_USAGE; /* the chroot */
    case ZKR_ECONNLOSS:
    case ZKR_ESESSIONLOST:
    case ZKR_ETIMEDOUT: return ZKRC_EX_UNAVAILABLE;
    default: return ZKRC_EX_SOFTWARE;
    }
}

/* Connect (the connect timeout; a signal ends the process meanwhile, as
 * nothing needs cleaning up yet).  0, or an exit code. */
static int connect_client(tool_t *t)
{
    const opts_t *o = &t->o;
    zkr_client_options_t opt;
    zkr_client_options_init(&opt);
    opt.session_timeout_ms = o->session_timeout_ms;
    opt.connect_timeout_ms = o->connect_timeout_ms;
    opt.chroot = o->chroot;
    opt.auth_scheme = o->auth_scheme;
    opt.auth_data = o->auth_data;
    opt.auth_data_len = o->auth_data ? (int)strlen(o->auth_data) : 0;
    opt.zk_log_level = 0;                            /* not the C client's lines */
    opt.log_fn = on_log;                             /* the library's, warnings and errors */
    opt.log_level = o->quiet ? 0 : ZKR_LOG_WARN;
    int rc = zkr_client_open(&t->c, o->hosts, &opt);
    if (rc == ZKR_OK)
        return 0;
    if (rc == ZKR_ETIMEDOUT)
        say("cannot connect to %s within %.1f s", o->hosts, (double)o->connect_timeout_ms / 1000.0);
    else if (rc == ZKR_ENONODE)
        say("the chroot %s does not exist", o->chroot ? o->chroot : "");
    else if (rc == ZKR_ENOAUTH)
        say("authentication refused by %s", o->hosts);
    else
        say("cannot connect to %s: %s", o->hosts, zkr_strerror(rc));
    return exit_for(rc);
}

/* From now on SIGINT, SIGTERM and SIGHUP stop the tool cleanly (on any
 * thread: the handler only notes the signal and wakes the main thread). */
static int catch_signals(void)
{
    if (pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0)
        return -1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        if (sigaction(sigs[i], &sa, NULL) != 0)
            return -1;
    return 0;
}

/* Start the cache and wait for its first load.  0, or an exit code. */
static int load(tool_t *t)
{
    const opts_t *o = &t->o;
    zkr_cache_options_t opt;
    zkr_cache_options_init(&opt);
    opt.shape = o->shape;
    opt.max_depth = o->depth;
    opt.data = !o->stat;
    int rc = zkr_cache_new(&t->cache, t->c, o->path, &opt);
    if (rc == ZKR_OK && !o->once)
        rc = zkr_cache_set_listener(t->cache, on_event, t); /* before the start: every event */
    if (rc == ZKR_OK)
        rc = zkr_cache_start(t->cache);
    if (rc != ZKR_OK) {
        say("cannot cache %s: %s", o->path, zkr_strerror(rc));
        return exit_for(rc);
    }
    int64_t deadline = o->timeout_ms < 0 ? -1 : zkrt_now_ms() + o->timeout_ms;
    for (;;) {
        int64_t left = deadline < 0 ? SLICE_MS : deadline - zkrt_now_ms();
        rc = zkr_cache_wait_initialized(t->cache, left < 0 ? 0 : (left > SLICE_MS ? SLICE_MS : left));
        if (stop_signal) {
            say("interrupted by signal %d while loading %s", (int)stop_signal, o->path);
            return 128 + stop_signal;
        }
        if (rc == ZKR_OK)
            return 0;
        if (rc != ZKR_ETIMEDOUT) {
            say("cannot load %s: %s", o->path, zkr_strerror(rc));
            return exit_for(rc);
        }
        if (deadline >= 0 && zkrt_now_ms() >= deadline) {
            say("%s not loaded within %.1f s", o->path, (double)o->timeout_ms / 1000.0);
            return ZKRC_EX_TEMPFAIL;
        }
    }
}

/* Print the events as they come, until a signal.  0, or an exit code. */
static int follow(tool_t *t)
{
    int loading = 1; /* the first load's events: in the listing already */
    printf("INITIALIZED");
    end_line(t);
    while (!stop_signal && !t->out_error && !t->mem_error) {
        struct pollfd p = {wake[0], POLLIN, 0};
        if (poll(&p, 1, SLICE_MS) < 0 && errno != EINTR) {
            say("poll: %s", strerror(errno));
            return ZKRC_EX_SOFTWARE;
        }
        char buf[256];
        while (read(wake[0], buf, sizeof buf) > 0) {
        }
        int lost = 0;
        note_t *notes = take_notes(&lost);
        for (note_t *n = notes; n && !t->out_error; n = n->next) {
            if (loading) {
                loading = n->type != ZKR_CACHE_INITIALIZED;
                continue;
            }
            tell(t, n);
        }
        note_free(notes);
        if (lost) {
            say("out of memory: %d event(s) not shown", lost);
            return ZKRC_EX_SOFTWARE;
        }
    }
    if (t->mem_error) {
        say("out of memory");
        return ZKRC_EX_SOFTWARE;
    }
    return t->out_error ? ZKRC_EX_SOFTWARE : 0;
}

static int run(tool_t *t)
{
    int code = connect_client(t);
    if (code)
        return code;
    if (catch_signals() != 0) {
        say("cannot start: %s", strerror(errno));
        return ZKRC_EX_SOFTWARE;
    }
    if ((code = load(t)) != 0)
        return code;
    if ((code = list_all(t)) != 0)
        return code;
    if (t->out_error) {
        say("cannot write the listing");
        return ZKRC_EX_SOFTWARE;
    }
    return t->o.once ? 0 : follow(t);
}

int main(int argc, char **argv)
{
    tool_t t;
    memset(&t, 0, sizeof t);
    int code = parse(&t.o, argc, argv);
    if (code >= 0) {
        opts_free(&t.o);
        return code;
    }
    quiet = t.o.quiet;
    code = run(&t);
    /* after zkr_cache_free the listener does not run and will not run */
    zkr_cache_free(t.cache);
    zkr_client_close(t.c); /* the session ends: the cache wrote nothing */
    note_t *rest = take_notes(&(int){0});
    note_free(rest);
    shown_free(&t.shown);
    opts_free(&t.o);
    if (code == 0 && fflush(stdout) != 0)
        code = ZKRC_EX_SOFTWARE;
    return code;
}

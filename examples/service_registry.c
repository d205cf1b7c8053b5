/* service_registry: service discovery in curator-x-discovery's format
 * (zkr/discovery.h): a service that registers itself, and a client that
 * follows the instances of a service and picks one round-robin.  Java
 * services using Curator's ServiceDiscovery on the same base path find
 * the C services, and the C client picks theirs.
 *
 *   service_registry --serve  [HOSTS] [--base B] [--name N] [--id ID]
 *                             [--address A] [--port P] [--seconds S]
 *   service_registry --client [HOSTS] [--base B] [--name N] [--every MS]
 *                             [--seconds S]
 *   service_registry --demo   [HOSTS] [--base B]
 *   service_registry --help
 *
 * HOSTS defaults to $ZKR_HOSTS, then 127.0.0.1:2181; B to /services, N to
 * web.  --serve registers the instance N/ID (ID: a fresh UUID by default)
 * at A:P ("registered web/ID at A:P"), keeps it registered (made again
 * after a lost session) and unregisters it when it stops ("unregistered
 * web/ID").  --client keeps a service cache of N: "instances: ID ID ..."
 * after the first load and after each change (one "change: ADDED ID" line
 * per event before it), and every MS milliseconds (default 1000) picks
 * one: "pick: ID A:P", or "pick: none".  --demo runs two services and a
 * client in one process: the picks alternate between the two, one
 * unregisters, the picks stay on the other.
 *
 * Both stop on SIGINT or SIGTERM, or after --seconds S.  The last line is
 * "CHECK PASSED: ..." (exit 0) or "CHECK FAILED: ..." (exit 1). */
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

#include "exdata.h"

#define PROG "service_registry"
#define TIMEOUT_MS 15000

static const char *hosts;
static const char *base = "/services";
static const char *name = "web";
static const char *id;
static const char *address = "127.0.0.1";
static int port = 8080, every = 1000, seconds;
static enum { NONE, SERVE, CLIENT, DEMO } mode;

static volatile sig_atomic_t stop_signal;
static atomic_int changes; /* events the cache's listener was told */

static void on_signal(int sig)
{
    stop_signal = sig;
}

/* Sleep ms, or less on a signal. */
static void nap(int ms)
{
    int64_t end = ex_now_ms() + ms;
    while (!stop_signal && ex_now_ms() < end)
        ex_sleep_ms(20);
}

/* ---- the service ---------------------------------------------------------------------- */

/* Register name/id (a fresh id if NULL) at addr:p on d; 0, or -1 after
 * a message. */
static int register_self(zkr_discovery_t *d, const char *the_id, const char *addr, int p, zkr_instance_t *me)
{
    int rc = zkr_instance_init(me);
    if (rc == ZKR_OK) {
        me->name = name;
        if (the_id)
            me->id = the_id;
        me->address = addr;
        me->port = p;
        rc = zkr_discovery_register(d, me, TIMEOUT_MS);
    }
    if (rc != ZKR_OK) {
        fprintf(stderr, PROG ": register %s/%s: %s\n", name, the_id ? the_id : "(new id)", zkr_strerror(rc));
        return -1;
    }
    printf("registered %s/%s at %s:%d\n", me->name, me->id, addr, p);
    return 0;
}

static int serve(zkr_client_t *c)
{
    zkr_discovery_t *d = NULL;
    int rc = zkr_discovery_new(&d, c, base);
    if (rc != ZKR_OK) {
        fprintf(stderr, PROG ": %s: %s\n", base, zkr_strerror(rc));
        return ex_check(0, "discovery");
    }
    zkr_instance_t me;
    if (register_self(d, id, address, port, &me) != 0) {
        zkr_discovery_free(d);
        return ex_check(0, "register");
    }
    char who[300];
    snprintf(who, sizeof who, "%s/%s", me.name, me.id);
    nap(seconds > 0 ? seconds * 1000 : 0x7fffffff);
    zkr_discovery_free(d); /* unregisters */
    printf("unregistered %s\n", who);
    return ex_check(1, who);
}

/* ---- the client --------------------------------------------------------------------------- */

/* The cache's listener (the client's callback thread): print the change;
 * the main loop prints the list it makes. */
static void on_change(zkr_service_cache_t *sc, const zkr_service_event_t *ev, void *ctx)
{
    (void)sc, (void)ctx;
    if (ev->type == ZKR_SERVICE_ADDED || ev->type == ZKR_SERVICE_UPDATED || ev->type == ZKR_SERVICE_REMOVED) {
        printf("change: %s %s\n", zkr_service_event_name(ev->type), ev->instance ? ev->instance->id : ev->node_name);
        atomic_fetch_add(&changes, 1);
    } else if (ev->type == ZKR_SERVICE_STATE) {
        printf("connection %s\n", zkr_state_name(ev->state));
    }
}

static int print_instances(zkr_service_cache_t *sc)
{
    zkr_instance_t **v = NULL;
    size_t n = 0;
    int rc = zkr_service_cache_instances(sc, &v, &n);
    if (rc != ZKR_OK) {
        fprintf(stderr, PROG ": instances: %s\n", zkr_strerror(rc));
        return -1;
    }
    printf("instances:");
    for (size_t i = 0; i < n; i++)
        printf(" %s", v[i]->id);
    printf("%s\n", n ? "" : " none");
    zkr_instances_free(v, n);
    return 0;
}

/* One pick: its id copied into last (size len, "" for none); 0, or -1. */
static int pick(zkr_service_provider_t *p, char *last, size_t len)
{
    zkr_instance_t *in = NULL;
    int rc = zkr_service_provider_pick(p, &in);
    last[0] = '\0';
    if (rc == ZKR_ENONODE) {
        printf("pick: none\n");
        return 0;
    }
    if (rc != ZKR_OK) {
        fprintf(stderr, PROG ": pick: %s\n", zkr_strerror(rc));
        return -1;
    }
    printf("pick: %s %s:%d\n", in->id, in->address ? in->address : "-", (int)in->port);
    snprintf(last, len, "%s", in->id);
    zkr_instance_free(in);
    return 0;
}

typedef struct follower {
    zkr_discovery_t *d;
    zkr_service_cache_t *sc;
    zkr_service_provider_t *p;
} follower_t;

static void follow_stop(follower_t *f)
{
    zkr_service_provider_free(f->p);
    zkr_service_cache_free(f->sc); /* after it, the listener does not run */
    zkr_discovery_free(f->d);
}

static int follow_start(zkr_client_t *c, follower_t *f)
{
    memset(f, 0, sizeof *f);
    int rc = zkr_discovery_new(&f->d, c, base);
    if (rc == ZKR_OK)
        rc = zkr_service_cache_new(&f->sc, f->d, name);
    if (rc == ZKR_OK)
        rc = zkr_service_cache_set_listener(f->sc, on_change, NULL);
    if (rc == ZKR_OK)
        rc = zkr_service_cache_start(f->sc);
    if (rc == ZKR_OK)
        rc = zkr_service_cache_wait_initialized(f->sc, TIMEOUT_MS);
    if (rc == ZKR_OK)
        rc = zkr_service_provider_new(&f->p, f->sc, ZKR_PROVIDER_ROUND_ROBIN);
    if (rc != ZKR_OK) {
        fprintf(stderr, PROG ": follow %s/%s: %s\n", base, name, zkr_strerror(rc));
        follow_stop(f);
        return -1;
    }
    return print_instances(f->sc);
}

static int client(zkr_client_t *c)
{
    follower_t f;
    if (follow_start(c, &f) != 0)
        return ex_check(0, "follow the service");
    int errors = 0, picks = 0, seen = atomic_load(&changes);
    int64_t end = seconds > 0 ? ex_now_ms() + (int64_t)seconds * 1000 : -1;
    char last[64];
    while (!stop_signal && (end < 0 || ex_now_ms() < end)) {
        int now_seen = atomic_load(&changes);
        if (now_seen != seen) {
            seen = now_seen;
            errors += print_instances(f.sc) != 0;
        }
        errors += pick(f.p, last, sizeof last) != 0;
        picks++;
        nap(every);
    }
    follow_stop(&f);
    char what[100];
    snprintf(what, sizeof what, "%d picks, %d changes followed", picks, seen);
    return ex_check(errors == 0, what);
}

/* ---- --demo ----------------------------------------------------------------------------------- */

/* 1 if the cache lists instance id (or cannot be read). */
static int lists(zkr_service_cache_t *sc, const char *the_id)
{
    zkr_instance_t **v = NULL;
    size_t n = 0;
    if (zkr_service_cache_instances(sc, &v, &n) != ZKR_OK)
        return 1;
    int found = 0;
    for (size_t i = 0; i < n; i++)
        found |= strcmp(v[i]->id, the_id) == 0;
    zkr_instances_free(v, n);
    return found;
}

static int demo(zkr_client_t *c)
{
    /* two services (their own sessions, as two processes would have) */
    zkr_client_t *s1 = ex_client_open(PROG, hosts), *s2 = s1 ? ex_client_open(PROG, hosts) : NULL;
    zkr_discovery_t *d1 = NULL, *d2 = NULL;
    zkr_instance_t a, b;
    follower_t f;
    int ok = s1 && s2 && zkr_discovery_new(&d1, s1, base) == ZKR_OK && zkr_discovery_new(&d2, s2, base) == ZKR_OK &&
             register_self(d1, "demo-a", "10.0.0.1", 8081, &a) == 0 &&
             register_self(d2, "demo-b", "10.0.0.2", 8082, &b) == 0;
    int following = ok && follow_start(c, &f) == 0;
    ok = following;
    char seq[256] = "", last[64];
    for (int i = 0; ok && i < 4; i++) {
        ok = pick(f.p, last, sizeof last) == 0;
        snprintf(seq + strlen(seq), sizeof seq - strlen(seq), "%s%s", i ? "," : "", last);
    }
    /* round robin in node-name order */
    int alternate = ok && strcmp(seq, "demo-a,demo-b,demo-a,demo-b") == 0;
    if (ok) {
        ok = zkr_discovery_unregister(d1, name, "demo-a") == ZKR_OK;
        printf("unregistered %s/demo-a\n", name);
        /* until the cache has seen it go (its listener may still be told
         * the first load's events: the list, not a count of events) */
        for (int64_t end = ex_now_ms() + TIMEOUT_MS; ok && lists(f.sc, "demo-a") && ex_now_ms() < end;)
            ex_sleep_ms(20);
        ok = ok && print_instances(f.sc) == 0;
        seq[0] = '\0';
        for (int i = 0; ok && i < 3; i++) {
            ok = pick(f.p, last, sizeof last) == 0;
            snprintf(seq + strlen(seq), sizeof seq - strlen(seq), "%s%s", i ? "," : "", last);
        }
    }
    int stays = ok && strcmp(seq, "demo-b,demo-b,demo-b") == 0;
    if (following)
        follow_stop(&f);
    zkr_discovery_free(d1);
    zkr_discovery_free(d2);
    zkr_client_close(s1);
    zkr_client_close(s2);
    return ex_check(ok && alternate && stays, "the picks alternate between two services, then stay on the one left");
}

/* ---- main ---------------------------------------------------------------------------------------- */

static const char usage_text[] =
    "usage: service_registry --serve  [HOSTS] [--base B] [--name N] [--id ID] [--address A] [--port P] [--seconds S]\n"
    "       service_registry --client [HOSTS] [--base B] [--name N] [--every MS] [--seconds S]\n"
    "       service_registry --demo   [HOSTS] [--base B]\n"
    "\n"
    "Service discovery in Curator's curator-x-discovery format: --serve registers\n"
    "an instance of service N until stopped; --client follows the instances of N\n"
    "and picks one round-robin every MS ms; --demo shows both in one process.\n"
    "Stops on SIGINT or SIGTERM, or after S seconds.\n"
    "\n"
    "  HOSTS               ZooKeeper connection string (default $ZKR_HOSTS, then\n"
    "                      127.0.0.1:2181)\n"
    "  -B, --base B        the base path (default /services)\n"
    "  -n, --name N        the service (default web)\n"
    "  -i, --id ID         --serve: the instance's id (default a fresh UUID)\n"
    "  -a, --address A     --serve: its address (default 127.0.0.1)\n"
    "  -p, --port P        --serve: its port, 0..65535 (default 8080)\n"
    "  -e, --every MS      --client: a pick every MS ms, 10..60000 (default 1000)\n"
    "  -s, --seconds S     stop after S seconds, 0..86400 (default 0: on a signal)\n"
    "  -h, --help          this text\n";

static int parse_args(int argc, char **argv)
{
    static const struct option opts[] = {
        {"serve", no_argument, NULL, 'S'},         {"client", no_argument, NULL, 'C'},
        {"demo", no_argument, NULL, 'D'},          {"base", required_argument, NULL, 'B'},
        {"name", required_argument, NULL, 'n'},    {"id", required_argument, NULL, 'i'},
        {"address", required_argument, NULL, 'a'}, {"port", required_argument, NULL, 'p'},
        {"every", required_argument, NULL, 'e'},   {"seconds", required_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0},
    };
    int o, bad = 0, modes = 0;
    while (!bad && (o = getopt_long(argc, argv, "SCDB:n:i:a:p:e:s:h", opts, NULL)) != -1) {
        switch (o) {
        case 'S': mode = SERVE, modes++; break;
        case 'C': mode = CLIENT, modes++; break;
        case 'D': mode = DEMO, modes++; break;
        case 'B': base = optarg; break;
        case 'n': name = optarg; break;
        case 'i': id = optarg; break;
        case 'a': address = optarg; break;
        case 'p': bad = ex_int_arg(PROG, "port", optarg, 0, 65535, &port); break;
        case 'e': bad = ex_int_arg(PROG, "every", optarg, 10, 60000, &every); break;
        case 's': bad = ex_int_arg(PROG, "seconds", optarg, 0, 86400, &seconds); break;
        case 'h': return ex_usage(usage_text, 1);
        default: bad = -1; break;
        }
    }
    if (!bad && modes != 1) {
        fprintf(stderr, PROG ": one of --serve, --client, --demo\n");
        bad = -1;
    }
    return ex_args_done(bad, argc, argv, &hosts, base, 400, usage_text);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (parse_args(argc, argv) != 0)
        return 2;
    ex_on_stop_signals(on_signal);
    zoo_set_debug_level(0); /* keep the ZooKeeper client's log quiet */
    zkr_client_t *c = ex_client_open(PROG, hosts);
    if (!c)
        return ex_check(0, "connect");
    int rc = mode == SERVE ? serve(c) : mode == CLIENT ? client(c) : demo(c);
    zkr_client_close(c);
    return rc;
}

/* zkr_discovery and Apache Curator 5.4's curator-x-discovery (Debian's
 * jars, the default JsonInstanceSerializer with a Map payload) on the same
 * base paths: the Java side is tests/interop/DiscoveryPeer.java, driven
 * over a pipe.  Both sides describe an instance in one form
 * (id;name;address;port;sslPort;type;enabled;payload;uriSpec;time), which
 * must be equal field by field:
 *
 *  - a C instance is found by Curator's queryForInstances,
 *    queryForInstance, its ServiceCache and its ServiceProvider; a C
 *    update is seen by them, a C unregister too;
 *  - a Curator instance is found by the C queries, the C service cache
 *    (an ADDED event with the instance) and a C provider; a Curator update
 *    is told UPDATED, a Curator unregister REMOVED;
 *  - DYNAMIC_SEQUENTIAL instances of both sides are listed by the other;
 *  - a C instance written disabled ("enabled":false) is read so by
 *    Curator, whose provider skips it;
 *  - Curator's close deletes its STATIC instance too (as the C free does).
 *
 * Every wait is bounded; no test asserts a speed. */
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/harness/zkr_test.h"
#include "tests/interop/jpeer.h"

#define SESSION_MS 10000
#define WAIT_MS 20000

static zkr_client_t *client;

static int suite_init(void)
{
    jpeer_java = jpeer_start("DiscoveryPeer");
    return jpeer_java ? 0 : 1;
}

static int suite_clean(void)
{
    jpeer_stop(jpeer_java);
    jpeer_java = NULL;
    zkr_client_close(client);
    client = NULL;
    return 0;
}

static void conn(void)
{
    if (!client)
        client = zkt_client(SESSION_MS);
    CU_ASSERT_FATAL(client != NULL);
}

/* ---- one description of an instance on both sides -------------------------------------- */

static int by_key(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A Map payload as the peer prints it: "k=v,..." by key, without Jackson's
 * "@class" (its type, not an entry). */
static void payload_text(const char *json, char *out, size_t len)
{
    snprintf(out, len, "-");
    if (!json)
        return;
    json_error_t err;
    json_t *o = json_loads(json, JSON_DECODE_ANY, &err);
    if (!json_is_object(o)) {
        snprintf(out, len, "NOT A MAP %s", json);
        json_decref(o);
        return;
    }
    const char *keys[64];
    size_t n = 0;
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v)
    {
        if (strcmp(k, "@class") != 0 && n < 64)
            keys[n++] = k;
    }
    qsort(keys, n, sizeof keys[0], by_key);
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        json_t *val = json_object_get(o, keys[i]);
        snprintf(out + strlen(out), len - strlen(out), "%s%s=%s", i ? "," : "", keys[i],
                 json_is_string(val) ? json_string_value(val) : "?");
    }
    json_decref(o);
}

static char *describe(const zkr_instance_t *in)
{
    static char buf[8][1024];
    static int slot;
    char *s = buf[slot++ % 8];
    char pay[512], uri[256] = "", port[16] = "-", ssl[16] = "-";
    payload_text(in->payload, pay, sizeof pay);
    if (!in->uri_parts)
        snprintf(uri, sizeof uri, "-");
    for (size_t i = 0; in->uri_parts && i < in->uri_part_count; i++)
        snprintf(uri + strlen(uri), sizeof uri - strlen(uri), in->uri_parts[i].variable ? "{%s}" : "%s",
                 in->uri_parts[i].value);
    if (in->port >= 0)
        snprintf(port, sizeof port, "%d", (int)in->port);
    if (in->ssl_port >= 0)
        snprintf(ssl, sizeof ssl, "%d", (int)in->ssl_port);
    snprintf(s, 1024, "%s;%s;%s;%s;%s;%s;%s;%s;%s;%lld", in->id, in->name, in->address ? in->address : "-", port,
             ssl, zkr_service_type_name(in->service_type), in->enabled ? "true" : "false", pay, uri,
             (long long)in->registration_time_utc);
    return s;
}

/* Several, as the peer lists them: by id, " | " between. */
static int by_id(const void *a, const void *b)
{
    return strcmp((*(zkr_instance_t *const *)a)->id, (*(zkr_instance_t *const *)b)->id);
}

static char *describe_all(zkr_instance_t **v, size_t n)
{
    static char buf[8192];
    if (n > 0) /* (v may be NULL then) */
        qsort(v, n, sizeof v[0], by_id);
    snprintf(buf, sizeof buf, "INSTANCES %s", n ? "" : "-");
    for (size_t i = 0; i < n; i++)
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s", i ? " | " : "", describe(v[i]));
    return buf;
}

/* Ask the peer until it answers want (bounded); 1 if it did. */
static int jwait(const char *want, const char *cmd)
{
    int64_t until = zkt_now_ms() + WAIT_MS;
    char *last = NULL;
    for (;;) {
        free(last);
        last = jcmd("%s", cmd);
        if (strcmp(last, want) == 0 || zkt_now_ms() > until)
            break;
        zkt_sleep_ms(50);
    }
    int ok = strcmp(last, want) == 0;
    if (!ok)
        printf("\n    %s:\n      got  %s\n      want %s\n", cmd, last, want);
    free(last);
    return ok;
}

/* ---- C registers, Curator reads ---------------------------------------------------------------- */

static const zkr_uri_part_t URI[] = {{"scheme", 1}, {"://h.example:", 0}, {"port", 1}};

static void test_c_to_curator(void)
{
    conn();
    char base[256], cmd[512];
    zkt_path("disc-c2j", base, sizeof base);
    CU_ASSERT(jis("OK", "discovery %s", base));
    zkr_discovery_t *d = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_discovery_new(&d, client, base), ZKR_OK);
    zkr_instance_t a, b;
    CU_ASSERT_EQUAL_FATAL(zkr_instance_init(&a), ZKR_OK);
    a.name = "web";
    a.address = "10.1.2.3";
    a.port = 8080;
    a.ssl_port = 8443;
    a.payload = "{\"zone\":\"eu-1\",\"weight\":\"3\"}";
    a.uri_parts = URI;
    a.uri_part_count = 3;
    CU_ASSERT_EQUAL_FATAL(zkr_instance_init(&b), ZKR_OK);
    b.name = "web";
    b.service_type = ZKR_SERVICE_STATIC;
    CU_ASSERT_EQUAL(zkr_discovery_register(d, &a, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_discovery_register(d, &b, WAIT_MS), ZKR_OK);
    /* Curator's cache and provider, started before the changes below */
    CU_ASSERT(jis("OK", "cache %s web", base));
    CU_ASSERT(jis("OK", "provider %s web sticky", base));

    zkr_instance_t *both[2] = {&a, &b};
    char want[4096];
    snprintf(want, sizeof want, "%s", describe_all(both, 2));
    snprintf(cmd, sizeof cmd, "query %s web", base);
    CU_ASSERT(jwait(want, cmd));
    snprintf(cmd, sizeof cmd, "cached %s web", base);
    CU_ASSERT(jwait(want, cmd));
    snprintf(cmd, sizeof cmd, "get %s web %s", base, a.id);
    CU_ASSERT(jwait(describe(&a), cmd));
    snprintf(cmd, sizeof cmd, "names %s", base);
    CU_ASSERT(jwait("NAMES web", cmd));
    char *picked = jcmd("pick %s web", base);
    CU_ASSERT(strcmp(picked, describe(&a)) == 0 || strcmp(picked, describe(&b)) == 0);
    free(picked);

    /* a C update: seen by the query and the cache */
    a.port = 9090;
    a.payload = "{\"zone\":\"eu-2\"}";
    CU_ASSERT_EQUAL(zkr_discovery_update(d, &a, WAIT_MS), ZKR_OK);
    snprintf(cmd, sizeof cmd, "get %s web %s", base, a.id);
    CU_ASSERT(jwait(describe(&a), cmd));
    snprintf(want, sizeof want, "%s", describe_all(both, 2));
    snprintf(cmd, sizeof cmd, "cached %s web", base);
    CU_ASSERT(jwait(want, cmd));

    /* a C unregister: gone for Curator */
    CU_ASSERT_EQUAL(zkr_discovery_unregister(d, "web", a.id), ZKR_OK);
    zkr_instance_t *one[1] = {&b};
    snprintf(want, sizeof want, "%s", describe_all(one, 1));
    snprintf(cmd, sizeof cmd, "query %s web", base);
    CU_ASSERT(jwait(want, cmd));
    snprintf(cmd, sizeof cmd, "cached %s web", base);
    CU_ASSERT(jwait(want, cmd));
    snprintf(cmd, sizeof cmd, "get %s web %s", base, a.id);
    CU_ASSERT(jwait("NONE", cmd));
    picked = jcmd("pick %s web", base);
    CU_ASSERT_STRING_EQUAL(picked, describe(&b));
    free(picked);
    char *n = jcmd("changes %s web", base);
    CU_ASSERT(strncmp(n, "CHANGES ", 8) == 0 && atoi(n + 8) >= 2);
    free(n);
    /* the free unregisters the STATIC one too */
    zkr_discovery_free(d);
    snprintf(cmd, sizeof cmd, "query %s web", base);
    CU_ASSERT(jwait("INSTANCES -", cmd));
    CU_ASSERT(jis("OK", "close %s", base));
}

/* ---- Curator registers, C reads ---------------------------------------------------------------- */

typedef struct rec {
    pthread_mutex_t mu;
    char last[64][1024];
    zkr_service_event_type_t type[64];
    int n;
} rec_t;

static void on_service(zkr_service_cache_t *sc, const zkr_service_event_t *e, void *ctx)
{
    (void)sc;
    rec_t *r = ctx;
    if (e->type != ZKR_SERVICE_ADDED && e->type != ZKR_SERVICE_UPDATED && e->type != ZKR_SERVICE_REMOVED)
        return;
    pthread_mutex_lock(&r->mu);
    if (r->n < 64) {
        r->type[r->n] = e->type;
        snprintf(r->last[r->n], sizeof r->last[0], "%s", e->instance ? describe(e->instance) : "UNREADABLE");
        r->n++;
    }
    pthread_mutex_unlock(&r->mu);
}

typedef struct want_ev {
    rec_t *r;
    zkr_service_event_type_t type;
    const char *desc;
} want_ev_t;

static int told(void *arg)
{
    want_ev_t *w = arg;
    int ok = 0;
    pthread_mutex_lock(&w->r->mu);
    for (int i = 0; i < w->r->n; i++)
        ok |= w->r->type[i] == w->type && strcmp(w->r->last[i], w->desc) == 0;
    pthread_mutex_unlock(&w->r->mu);
    return ok;
}

static int wait_told(rec_t *r, zkr_service_event_type_t type, const char *desc)
{
    want_ev_t w = {r, type, desc};
    int ok = zkt_wait_for(told, &w, WAIT_MS);
    if (!ok)
        printf("\n    not told %s %s\n", zkr_service_event_name(type), desc);
    return ok;
}

/* The peer's description of its instance ID (from its own query). */
static char *curator_desc(const char *base, const char *name, const char *id)
{
    static char buf[1024];
    char *r = jcmd("get %s %s %s", base, name, id);
    snprintf(buf, sizeof buf, "%s", r);
    free(r);
    return buf;
}

static char *c_query(zkr_discovery_t *d, const char *name)
{
    zkr_instance_t **v = NULL;
    size_t n = 0;
    CU_ASSERT_EQUAL(zkr_discovery_instances(d, name, &v, &n, WAIT_MS), ZKR_OK);
    char *s = describe_all(v, n);
    zkr_instances_free(v, n);
    return s;
}

typedef struct want_cache {
    zkr_service_cache_t *sc;
    const char *want;
} want_cache_t;

static int cache_is(void *arg)
{
    want_cache_t *w = arg;
    zkr_instance_t **v = NULL;
    size_t n = 0;
    if (zkr_service_cache_instances(w->sc, &v, &n) != ZKR_OK)
        return 0;
    int ok = strcmp(describe_all(v, n), w->want) == 0;
    zkr_instances_free(v, n);
    return ok;
}

static void test_curator_to_c(void)
{
    conn();
    char base[256], want[4096];
    zkt_path("disc-j2c", base, sizeof base);
    CU_ASSERT(jis("OK", "discovery %s", base));
    zkr_discovery_t *d = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_discovery_new(&d, client, base), ZKR_OK);
    static rec_t r;
    memset(&r, 0, sizeof r);
    pthread_mutex_init(&r.mu, NULL);
    zkr_service_cache_t *sc = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_service_cache_new(&sc, d, "api"), ZKR_OK);
    zkr_service_cache_set_listener(sc, on_service, &r);
    CU_ASSERT_EQUAL(zkr_service_cache_start(sc), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_service_cache_wait_initialized(sc, WAIT_MS), ZKR_OK);

    CU_ASSERT(jis("OK", "register %s api j-1 192.168.0.9 7000 7443 DYNAMIC {scheme}://x:{port} zone=us,tier=gold",
                  base));
    CU_ASSERT(jis("OK", "register %s api j-2 - - - STATIC - -", base));
    char d1[1024], d2[1024];
    snprintf(d1, sizeof d1, "%s", curator_desc(base, "api", "j-1"));
    snprintf(d2, sizeof d2, "%s", curator_desc(base, "api", "j-2"));
    CU_ASSERT(strncmp(d1, "j-1;api;192.168.0.9;7000;7443;DYNAMIC;true;tier=gold,zone=us;{scheme}://x:{port};", 80) ==
              0);
    snprintf(want, sizeof want, "INSTANCES %s | %s", d1, d2);
    /* the C query, one instance, the cache's list and events */
    CU_ASSERT_STRING_EQUAL(c_query(d, "api"), want);
    zkr_instance_t *one = NULL;
    CU_ASSERT_EQUAL(zkr_discovery_instance(d, "api", "j-1", &one, WAIT_MS), ZKR_OK);
    CU_ASSERT(one && strcmp(describe(one), d1) == 0);
    CU_ASSERT(one && one->payload && strstr(one->payload, "\"@class\":\"java.util.LinkedHashMap\""));
    zkr_instance_free(one);
    want_cache_t wc = {sc, want};
    CU_ASSERT(zkt_wait_for(cache_is, &wc, WAIT_MS));
    CU_ASSERT(wait_told(&r, ZKR_SERVICE_ADDED, d1));
    CU_ASSERT(wait_told(&r, ZKR_SERVICE_ADDED, d2));
    char **names = NULL;
    size_t n = 0;
    CU_ASSERT_EQUAL(zkr_discovery_names(d, &names, &n, WAIT_MS), ZKR_OK);
    CU_ASSERT(n == 1 && strcmp(names[0], "api") == 0);
    zkr_strings_free(names, n);
    /* a C provider picks Curator's instances, round robin by node name */
    zkr_service_provider_t *p = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_service_provider_new(&p, sc, ZKR_PROVIDER_ROUND_ROBIN), ZKR_OK);
    zkr_instance_t *x = NULL, *y = NULL;
    CU_ASSERT_EQUAL(zkr_service_provider_pick(p, &x), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_service_provider_pick(p, &y), ZKR_OK);
    CU_ASSERT(x && y && strcmp(x->id, "j-1") == 0 && strcmp(y->id, "j-2") == 0);
    zkr_instance_free(x);
    zkr_instance_free(y);

    /* a Curator update: UPDATED with the new fields */
    CU_ASSERT(jis("OK", "update %s api j-1 192.168.0.10 7001 - DYNAMIC - zone=eu", base));
    snprintf(d1, sizeof d1, "%s", curator_desc(base, "api", "j-1"));
    CU_ASSERT(strncmp(d1, "j-1;api;192.168.0.10;7001;-;DYNAMIC;true;zone=eu;-;", 49) == 0);
    CU_ASSERT(wait_told(&r, ZKR_SERVICE_UPDATED, d1));
    snprintf(want, sizeof want, "INSTANCES %s | %s", d1, d2);
    CU_ASSERT(zkt_wait_for(cache_is, &wc, WAIT_MS));
    CU_ASSERT_STRING_EQUAL(c_query(d, "api"), want);

    /* a Curator unregister: REMOVED */
    CU_ASSERT(jis("OK", "unregister %s j-1", base));
    CU_ASSERT(wait_told(&r, ZKR_SERVICE_REMOVED, d1));
    snprintf(want, sizeof want, "INSTANCES %s", d2);
    CU_ASSERT(zkt_wait_for(cache_is, &wc, WAIT_MS));
    CU_ASSERT_STRING_EQUAL(c_query(d, "api"), want);
    /* Curator's close deletes its STATIC instance too */
    CU_ASSERT(jis("OK", "close %s", base));
    CU_ASSERT(wait_told(&r, ZKR_SERVICE_REMOVED, d2));
    CU_ASSERT_STRING_EQUAL(c_query(d, "api"), "INSTANCES -");
    zkr_service_provider_free(p);
    zkr_service_cache_free(sc);
    zkr_discovery_free(d);
}

/* ---- DYNAMIC_SEQUENTIAL both ways ------------------------------------------------------------------ */

static void test_sequential(void)
{
    conn();
    char base[256], cmd[512], want[4096];
    zkt_path("disc-seq", base, sizeof base);
    CU_ASSERT(jis("OK", "discovery %s", base));
    zkr_discovery_t *d = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_discovery_new(&d, client, base), ZKR_OK);
    zkr_instance_t a;
    CU_ASSERT_EQUAL_FATAL(zkr_instance_init(&a), ZKR_OK);
    a.name = "seq";
    a.service_type = ZKR_SERVICE_DYNAMIC_SEQUENTIAL;
    a.port = 1;
    CU_ASSERT_EQUAL(zkr_discovery_register(d, &a, WAIT_MS), ZKR_OK);
    CU_ASSERT(jis("OK", "register %s seq j-seq - 2 - DYNAMIC_SEQUENTIAL - k=v", base));
    /* each side lists both (Curator's by the id in its data: its node is
     * j-seq<number>) */
    zkr_instance_t **v = NULL;
    size_t n = 0;
    CU_ASSERT_EQUAL(zkr_discovery_instances(d, "seq", &v, &n, WAIT_MS), ZKR_OK);
    CU_ASSERT_FATAL(n == 2);
    qsort(v, n, sizeof v[0], by_id);
    int c_first = strcmp(a.id, "j-seq") < 0;
    zkr_instance_t *mine = v[c_first ? 0 : 1], *theirs = v[c_first ? 1 : 0];
    CU_ASSERT_STRING_EQUAL(describe(mine), describe(&a));
    CU_ASSERT(theirs->service_type == ZKR_SERVICE_DYNAMIC_SEQUENTIAL && theirs->port == 2 &&
              strcmp(theirs->id, "j-seq") == 0);
    snprintf(want, sizeof want, "%s", describe_all(v, n));
    zkr_instances_free(v, n);
    snprintf(cmd, sizeof cmd, "query %s seq", base);
    CU_ASSERT(jwait(want, cmd));
    zkr_discovery_free(d);
    CU_ASSERT(jis("OK", "close %s", base));
}

/* ---- "enabled": written only when false; Curator 5 reads it --------------------------------------- */

static void test_disabled(void)
{
    conn();
    char base[256], cmd[512];
    zkt_path("disc-off", base, sizeof base);
    CU_ASSERT(jis("OK", "discovery %s", base));
    zkr_discovery_t *d = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_discovery_new(&d, client, base), ZKR_OK);
    zkr_instance_t on, off;
    CU_ASSERT_EQUAL_FATAL(zkr_instance_init(&on), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_instance_init(&off), ZKR_OK);
    on.name = off.name = "svc";
    off.enabled = 0;
    CU_ASSERT_EQUAL(zkr_discovery_register(d, &on, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_discovery_register(d, &off, WAIT_MS), ZKR_OK);
    /* Curator reads enabled=false, and its provider never picks it */
    snprintf(cmd, sizeof cmd, "get %s svc %s", base, off.id);
    CU_ASSERT(jwait(describe(&off), cmd));
    CU_ASSERT(strstr(describe(&off), ";false;") != NULL);
    CU_ASSERT(jis("OK", "provider %s svc roundrobin", base));
    for (int i = 0; i < 6; i++) {
        snprintf(cmd, sizeof cmd, "pick %s svc", base);
        CU_ASSERT(jwait(describe(&on), cmd));
    }
    /* and enabled again (no "enabled" member): picked in turn */
    off.enabled = 1;
    CU_ASSERT_EQUAL(zkr_discovery_update(d, &off, WAIT_MS), ZKR_OK);
    snprintf(cmd, sizeof cmd, "get %s svc %s", base, off.id);
    CU_ASSERT(jwait(describe(&off), cmd));
    int seen_off = 0;
    for (int i = 0; i < 50 && !seen_off; i++) {
        char *r = jcmd("pick %s svc", base);
        seen_off = strcmp(r, describe(&off)) == 0;
        free(r);
        zkt_sleep_ms(20);
    }
    CU_ASSERT(seen_off);
    zkr_discovery_free(d);
    CU_ASSERT(jis("OK", "close %s", base));
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("discovery interop", suite_init, suite_clean);
    CU_add_test(s, "C registers: Curator's query, get, cache and provider see every field; update; unregister",
                test_c_to_curator);
    CU_add_test(s, "Curator registers: the C query, get, cache events and provider see every field; update; "
                   "unregister; close",
                test_curator_to_c);
    CU_add_test(s, "DYNAMIC_SEQUENTIAL instances of both sides listed by the other", test_sequential);
    CU_add_test(s, "a C instance disabled: Curator reads enabled=false and its provider skips it; enabled again",
                test_disabled);
}

int main(void)
{
    return zkt_main("discovery interop", add_suites);
}

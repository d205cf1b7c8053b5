/* Service discovery (zkr/discovery.h) on a real server: the JSON codec
 * (Curator's exact bytes, round trips, unknown members, nulls, malformed
 * and oversized data), registering (the modes of the service types, the
 * data, update, unregister, free; made again after a forced expiry;
 * another session's instance with the same id never touched), the
 * queries, the service cache's events and lists, the providers' order and
 * stickiness, and bad input. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/harness/zkproxy.h"
#include "tests/harness/zkr_test.h"

#define SESSION_MS 6000
#define WAIT_MS 15000

/* What Curator 5.4.0's JsonInstanceSerializer(Map.class) writes (taken
 * from the real jar), and its String-payload form. */
static const char CURATOR_MAP[] =
    "{\"name\":\"web\",\"id\":\"id1\",\"address\":\"10.0.0.1\",\"port\":80,\"sslPort\":443,"
    "\"payload\":{\"@class\":\"java.util.LinkedHashMap\",\"k\":\"v\",\"n\":3},\"registrationTimeUTC\":123,"
    "\"serviceType\":\"STATIC\",\"uriSpec\":{\"parts\":[{\"value\":\"scheme\",\"variable\":true},"
    "{\"value\":\"://foo.com:\",\"variable\":false},{\"value\":\"port\",\"variable\":true}]}}";
static const char CURATOR_NULLS[] =
    "{\"name\":\"web\",\"id\":\"id3\",\"address\":null,\"port\":null,\"sslPort\":null,\"payload\":null,"
    "\"registrationTimeUTC\":1795787544891,\"serviceType\":\"DYNAMIC\",\"uriSpec\":null}";

static char *dup_json(const zkr_instance_t *inst)
{
    char *json = NULL;
    size_t len = 0;
    CU_ASSERT_EQUAL(zkr_instance_to_json(inst, &json, &len), ZKR_OK);
    CU_ASSERT(json == NULL || strlen(json) == len);
    return json;
}

/* An instance like CURATOR_MAP's. */
static const zkr_uri_part_t PARTS[] = {{"scheme", 1}, {"://foo.com:", 0}, {"port", 1}};

static void fill_map(zkr_instance_t *in)
{
    CU_ASSERT_EQUAL_FATAL(zkr_instance_init(in), ZKR_OK);
    in->name = "web";
    in->id = "id1";
    in->address = "10.0.0.1";
    in->port = 80;
    in->ssl_port = 443;
    in->payload = "{\"@class\":\"java.util.LinkedHashMap\",\"k\":\"v\",\"n\":3}";
    in->registration_time_utc = 123;
    in->service_type = ZKR_SERVICE_STATIC;
    in->uri_parts = PARTS;
    in->uri_part_count = 3;
}

static int same(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static int equal(const zkr_instance_t *a, const zkr_instance_t *b)
{
    if (!same(a->name, b->name) || !same(a->id, b->id) || !same(a->address, b->address) || a->port != b->port ||
        a->ssl_port != b->ssl_port || !same(a->payload, b->payload) ||
        a->registration_time_utc != b->registration_time_utc || a->service_type != b->service_type ||
        !a->enabled != !b->enabled || !a->uri_parts != !b->uri_parts || a->uri_part_count != b->uri_part_count)
        return 0;
    for (size_t i = 0; i < a->uri_part_count; i++)
        if (!same(a->uri_parts[i].value, b->uri_parts[i].value) || !a->uri_parts[i].variable != !b->uri_parts[i].variable)
            return 0;
    return 1;
}

static void test_codec_curator_bytes(void)
{
    zkr_instance_t in;
    fill_map(&in);
    char *json = dup_json(&in);
    CU_ASSERT_STRING_EQUAL(json ? json : "", CURATOR_MAP);
    zkr_instance_t *back = NULL;
    CU_ASSERT_EQUAL(zkr_instance_from_json(CURATOR_MAP, strlen(CURATOR_MAP), &back), ZKR_OK);
    CU_ASSERT(back && equal(&in, back));
    CU_ASSERT(back && back->enabled == 1);
    zkr_instance_free(back);
    free(json);

    zkr_instance_t nulls;
    CU_ASSERT_EQUAL_FATAL(zkr_instance_init(&nulls), ZKR_OK);
    nulls.name = "web";
    nulls.id = "id3";
    nulls.registration_time_utc = 1795787544891LL;
    json = dup_json(&nulls);
    CU_ASSERT_STRING_EQUAL(json ? json : "", CURATOR_NULLS);
    free(json);
    CU_ASSERT_EQUAL(zkr_instance_from_json(CURATOR_NULLS, strlen(CURATOR_NULLS), &back), ZKR_OK);
    CU_ASSERT(back && equal(&nulls, back) && !back->address && back->port == -1 && back->ssl_port == -1 &&
              !back->payload && !back->uri_parts);
    zkr_instance_free(back);
}

static void test_codec_round_trips(void)
{
    zkr_instance_t in;
    CU_ASSERT_EQUAL_FATAL(zkr_instance_init(&in), ZKR_OK);
    CU_ASSERT_EQUAL(strlen(in.id), 36);
    CU_ASSERT(in.registration_time_utc > 1600000000000LL);
    CU_ASSERT_EQUAL(in.service_type, ZKR_SERVICE_DYNAMIC);
    CU_ASSERT_EQUAL(in.port, -1);
    CU_ASSERT_EQUAL(in.enabled, 1);
    zkr_instance_t other;
    CU_ASSERT_EQUAL_FATAL(zkr_instance_init(&other), ZKR_OK);
    CU_ASSERT_STRING_NOT_EQUAL(in.id, other.id);
    in.name = "caf\xc3\xa9";
    in.address = "fd00::2%eth0";
    in.port = 0;
    in.ssl_port = 65535;
    in.payload = "\"hello \\\"world\\\"\"";
    in.service_type = ZKR_SERVICE_DYNAMIC_SEQUENTIAL;
    in.enabled = 0;
    zkr_uri_part_t none[1];
    in.uri_parts = none;
    in.uri_part_count = 0;
    const char *payloads[] = {"\"hello \\\"world\\\"\"", "[1,2,{\"a\":null}]", "42", "true", "{}", NULL};
    for (size_t i = 0; i < sizeof payloads / sizeof payloads[0]; i++) {
        in.payload = payloads[i];
        char *json = dup_json(&in);
        CU_ASSERT(json && strstr(json, "\"enabled\":false") && strstr(json, "\"uriSpec\":{\"parts\":[]}"));
        zkr_instance_t *back = NULL;
        CU_ASSERT_EQUAL(zkr_instance_from_json(json ? json : "", json ? strlen(json) : 0, &back), ZKR_OK);
        CU_ASSERT(back && equal(&in, back));
        zkr_instance_t *copy = NULL;
        CU_ASSERT_EQUAL(zkr_instance_copy(back, &copy), ZKR_OK);
        CU_ASSERT(copy && back && equal(copy, back) && copy->name != back->name);
        zkr_instance_free(copy);
        zkr_instance_free(back);
        free(json);
    }
    CU_ASSERT_STRING_EQUAL(zkr_service_type_name(ZKR_SERVICE_PERMANENT), "PERMANENT");
    CU_ASSERT_STRING_EQUAL(zkr_service_type_name((zkr_service_type_t)9), "UNKNOWN");
}

static void test_codec_reading(void)
{
    /* unknown members ignored; absent ones as Curator's defaults; a part's
     * absent members "" and false; data need not be NUL-terminated */
    const char *j = "{\"zzz\":[1,{\"x\":2}],\"id\":\"a\",\"name\":\"s\",\"uriSpec\":{\"parts\":[{}],\"more\":1},"
                    "\"enabled\":true,\"port\":7}XXXX";
    zkr_instance_t *in = NULL;
    CU_ASSERT_EQUAL(zkr_instance_from_json(j, strlen(j) - 4, &in), ZKR_OK);
    CU_ASSERT_FATAL(in != NULL);
    CU_ASSERT(in->port == 7 && in->ssl_port == -1 && !in->address && !in->payload && in->enabled == 1 &&
              in->service_type == ZKR_SERVICE_DYNAMIC && in->registration_time_utc == 0 && in->uri_part_count == 1 &&
              strcmp(in->uri_parts[0].value, "") == 0 && in->uri_parts[0].variable == 0);
    zkr_instance_free(in);
    const char *off = "{\"id\":\"a\",\"name\":\"s\",\"enabled\":false}";
    CU_ASSERT_EQUAL(zkr_instance_from_json(off, strlen(off), &in), ZKR_OK);
    CU_ASSERT(in && in->enabled == 0);
    zkr_instance_free(in);

    const char *bad[] = {"", "{", "[]", "\"x\"", "null", "{\"name\":\"s\"}", "{\"id\":\"a\"}",
                         "{\"id\":1,\"name\":\"s\"}", "{\"id\":\"a\",\"name\":\"s\",\"port\":65536}",
                         "{\"id\":\"a\",\"name\":\"s\",\"port\":-1}", "{\"id\":\"a\",\"name\":\"s\",\"port\":\"80\"}",
                         "{\"id\":\"a\",\"name\":\"s\",\"sslPort\":1.5}", "{\"id\":\"a\",\"name\":\"s\",\"address\":3}",
                         "{\"id\":\"a\",\"name\":\"s\",\"serviceType\":\"ODD\"}",
                         "{\"id\":\"a\",\"name\":\"s\",\"registrationTimeUTC\":\"1\"}",
                         "{\"id\":\"a\",\"name\":\"s\",\"uriSpec\":[]}",
                         "{\"id\":\"a\",\"name\":\"s\",\"uriSpec\":{\"parts\":[1]}}",
                         "{\"id\":\"a\",\"name\":\"s\",\"uriSpec\":{\"parts\":[{\"value\":1}]}}",
                         "{\"id\":\"a\",\"name\":\"s\",\"enabled\":1}", "{\"id\":\"a\",\"name\":\"s\"} trailing",
                         "{\"id\":\"a\\u0000b\",\"name\":\"s\"}", "{\"id\":\"\xff\",\"name\":\"s\"}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        in = (zkr_instance_t *)1;
        int rc = zkr_instance_from_json(bad[i], strlen(bad[i]), &in);
        if (rc != ZKR_EBADDATA)
            printf("\n  accepted: %s (%d)\n", bad[i], rc);
        CU_ASSERT_EQUAL(rc, ZKR_EBADDATA);
        CU_ASSERT_PTR_NULL(in);
    }
    /* oversized: refused before parsing, however well-formed */
    size_t big = ZKR_INSTANCE_JSON_MAX + 64;
    char *b = malloc(big + 1);
    CU_ASSERT_FATAL(b != NULL);
    int n = snprintf(b, big + 1, "{\"id\":\"a\",\"name\":\"s\",\"payload\":\"");
    memset(b + n, 'x', big - (size_t)n - 2);
    memcpy(b + big - 2, "\"}", 3);
    CU_ASSERT_EQUAL(zkr_instance_from_json(b, big, &in), ZKR_EBADDATA);
    /* deep nesting: jansson's limit, an error, not a crash */
    for (size_t i = 0; i < 100000; i++)
        b[i] = '[';
    CU_ASSERT_EQUAL(zkr_instance_from_json(b, 100000, &in), ZKR_EBADDATA);
    free(b);
}

static void test_codec_bad_input(void)
{
    zkr_instance_t in;
    char *json = (char *)1;
    size_t len = 9;
    CU_ASSERT_EQUAL(zkr_instance_init(NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_instance_init_size(&in, 8), ZKR_EINVAL);
    fill_map(&in);
    CU_ASSERT_EQUAL(zkr_instance_to_json(NULL, &json, &len), ZKR_EINVAL);
    CU_ASSERT(json == NULL && len == 0);
    CU_ASSERT_EQUAL(zkr_instance_to_json(&in, NULL, &len), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_instance_to_json(&in, &json, NULL), ZKR_EINVAL);
    static char longaddr[ZKR_INSTANCE_ADDRESS_MAX + 2];
    memset(longaddr, 'a', sizeof longaddr - 1);
    struct {
        const char *what;
        zkr_instance_t in;
    } cases[12];
    for (int i = 0; i < 12; i++)
        cases[i].in = in;
    cases[0].in.name = NULL, cases[0].what = "no name";
    cases[1].in.name = "a/b", cases[1].what = "name with /";
    cases[2].in.id = "..", cases[2].what = "id ..";
    cases[3].in.id = "", cases[3].what = "empty id";
    cases[4].in.port = 65536, cases[4].what = "port";
    cases[5].in.ssl_port = -2, cases[5].what = "ssl port";
    cases[6].in.payload = "{nope", cases[6].what = "payload not JSON";
    cases[7].in.address = "\xc3(", cases[7].what = "address not UTF-8";
    cases[8].in.service_type = (zkr_service_type_t)4, cases[8].what = "type";
    cases[9].in.uri_parts = NULL, cases[9].what = "parts NULL with a count";
    cases[10].in.address = longaddr, cases[10].what = "address too long";
    cases[11].in.id = "a\x01", cases[11].what = "id with a control character";
    for (int i = 0; i < 12; i++) {
        int rc = zkr_instance_to_json(&cases[i].in, &json, &len);
        if (rc != ZKR_EINVAL)
            printf("\n  accepted: %s\n", cases[i].what);
        CU_ASSERT_EQUAL(rc, ZKR_EINVAL);
        CU_ASSERT_PTR_NULL(json);
    }
    zkr_instance_t *out = (zkr_instance_t *)1;
    CU_ASSERT_EQUAL(zkr_instance_from_json(NULL, 3, &out), ZKR_EINVAL);
    CU_ASSERT_PTR_NULL(out);
    CU_ASSERT_EQUAL(zkr_instance_from_json("{}", 2, NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_instance_copy(NULL, &out), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_instance_copy(&cases[0].in, &out), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_instance_copy(&in, NULL), ZKR_EINVAL);
    zkr_instance_free(NULL);
    zkr_instances_free(NULL, 3);
}

/* ---- the server side ------------------------------------------------------------------------- */

static zkr_client_t *client;
static zhandle_t *raw;

/* The suite's client and raw handle, made by its first test (CUnit's
 * assertions work only inside a test). */
static void conn(void)
{
    if (!client)
        client = zkt_client(SESSION_MS);
    if (!raw)
        raw = zkt_raw();
    CU_ASSERT_FATAL(client != NULL && raw != NULL);
}

static int teardown(void)
{
    zkr_client_close(client);
    if (raw)
        zkt_raw_close(raw);
    client = NULL;
    raw = NULL;
    return 0;
}

/* Write an instance's node as another program would (persistent). */
static void put_raw(const char *base, const zkr_instance_t *in, const char *node, const char *data)
{
    char dir[512], path[768];
    snprintf(dir, sizeof dir, "%s/%s", base, in ? in->name : "web");
    snprintf(path, sizeof path, "%s/%s", dir, node ? node : in->id);
    char *json = in ? dup_json(in) : NULL;
    const char *d = json ? json : data;
    zoo_create(raw, "/zkr-test", NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    zoo_create(raw, base, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    zoo_create(raw, dir, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    int rc = zoo_create(raw, path, d, d ? (int)strlen(d) : -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    if (rc == ZNODEEXISTS)
        rc = zoo_set(raw, path, d, d ? (int)strlen(d) : -1, -1);
    CU_ASSERT_EQUAL(rc, ZOK);
    free(json);
}

static void mk(zkr_instance_t *in, const char *name, const char *id, int port)
{
    CU_ASSERT_EQUAL_FATAL(zkr_instance_init(in), ZKR_OK);
    in->name = name;
    snprintf(in->id_buf, sizeof in->id_buf, "%s", id);
    in->address = "127.0.0.1";
    in->port = port;
}

static void test_queries(void)
{
    conn();
    char base[256];
    zkt_path("disc-q", base, sizeof base);
    zkr_discovery_t *d = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_discovery_new(&d, client, base), ZKR_OK);
    char **names = (char **)1;
    size_t n = 9;
    /* no base path yet: no names, no instances */
    CU_ASSERT_EQUAL(zkr_discovery_names(d, &names, &n, WAIT_MS), ZKR_OK);
    CU_ASSERT(names == NULL && n == 0);
    zkr_instance_t **v = NULL;
    CU_ASSERT_EQUAL(zkr_discovery_instances(d, "web", &v, &n, WAIT_MS), ZKR_OK);
    CU_ASSERT(v == NULL && n == 0);

    zkr_instance_t a, b, c;
    mk(&a, "web", "b-second", 81);
    mk(&b, "web", "a-first", 80);
    mk(&c, "db", "x", 5432);
    b.payload = "{\"zone\":\"eu\"}";
    put_raw(base, &a, NULL, NULL);
    put_raw(base, &b, NULL, NULL);
    put_raw(base, &c, NULL, NULL);
    put_raw(base, NULL, "broken", "{not json");
    put_raw(base, NULL, "empty", NULL);

    CU_ASSERT_EQUAL(zkr_discovery_names(d, &names, &n, WAIT_MS), ZKR_OK);
    CU_ASSERT(n == 2 && names && strcmp(names[0], "db") == 0 && strcmp(names[1], "web") == 0);
    zkr_strings_free(names, n);
    /* the two good ones, in node-name order; the broken and empty left out */
    CU_ASSERT_EQUAL(zkr_discovery_instances(d, "web", &v, &n, WAIT_MS), ZKR_OK);
    CU_ASSERT_FATAL(n == 2 && v != NULL);
    CU_ASSERT(equal(v[0], &b) && equal(v[1], &a));
    zkr_instances_free(v, n);

    zkr_instance_t *one = NULL;
    CU_ASSERT_EQUAL(zkr_discovery_instance(d, "db", "x", &one, WAIT_MS), ZKR_OK);
    CU_ASSERT(one && equal(one, &c));
    zkr_instance_free(one);
    CU_ASSERT_EQUAL(zkr_discovery_instance(d, "db", "nobody", &one, WAIT_MS), ZKR_ENONODE);
    CU_ASSERT_PTR_NULL(one);
    CU_ASSERT_EQUAL(zkr_discovery_instance(d, "web", "broken", &one, WAIT_MS), ZKR_EBADDATA);
    CU_ASSERT_EQUAL(zkr_discovery_instance(d, "web", "empty", &one, WAIT_MS), ZKR_EBADDATA);
    CU_ASSERT_PTR_NULL(one);
    zkr_discovery_free(d);
}

/* ---- the service cache ---------------------------------------------------------------------------- */

typedef struct rec {
    pthread_mutex_t mu;
    zkr_service_event_type_t type[256];
    char node[256][64];
    char id[256][64];
    int port[256];
    int n;
    atomic_int wrong;
    atomic_int free_own;
    zkr_service_cache_t *sc;
} rec_t;

static void on_service(zkr_service_cache_t *sc, const zkr_service_event_t *e, void *ctx)
{
    rec_t *r = ctx;
    if (sc != r->sc)
        atomic_fetch_add(&r->wrong, 1);
    if (atomic_exchange(&r->free_own, 0))
        zkr_service_cache_free(sc); /* refused: logged, nothing done */
    if (e->type == ZKR_SERVICE_STATE)
        return;
    pthread_mutex_lock(&r->mu);
    if (r->n < 256) {
        r->type[r->n] = e->type;
        snprintf(r->node[r->n], 64, "%s", e->node_name ? e->node_name : "");
        snprintf(r->id[r->n], 64, "%s", e->instance ? e->instance->id : "-");
        r->port[r->n] = e->instance ? e->instance->port : -2;
        r->n++;
    }
    pthread_mutex_unlock(&r->mu);
}

static int count(rec_t *r, zkr_service_event_type_t t, const char *node)
{
    int n = 0;
    pthread_mutex_lock(&r->mu);
    for (int i = 0; i < r->n; i++)
        n += r->type[i] == t && (!node || strcmp(r->node[i], node) == 0);
    pthread_mutex_unlock(&r->mu);
    return n;
}

typedef struct wait_ev {
    rec_t *r;
    zkr_service_event_type_t t;
    const char *node;
    int n;
} wait_ev_t;

static int have(void *arg)
{
    wait_ev_t *w = arg;
    return count(w->r, w->t, w->node) >= w->n;
}

static int wait_events(rec_t *r, zkr_service_event_type_t t, const char *node, int n)
{
    wait_ev_t w = {r, t, node, n};
    return zkt_wait_for(have, &w, WAIT_MS);
}

/* The cache's instances' ids, joined with ',' (static buffer). */
static const char *ids_of(zkr_service_cache_t *sc)
{
    static char buf[1024];
    zkr_instance_t **v = NULL;
    size_t n = 0;
    buf[0] = '\0';
    CU_ASSERT_EQUAL(zkr_service_cache_instances(sc, &v, &n), ZKR_OK);
    for (size_t i = 0; i < n; i++)
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s", i ? "," : "", v[i]->id);
    zkr_instances_free(v, n);
    return buf;
}

typedef struct want_ids {
    zkr_service_cache_t *sc;
    const char *ids;
} want_ids_t;

static int ids_are(void *arg)
{
    want_ids_t *w = arg;
    return strcmp(ids_of(w->sc), w->ids) == 0;
}

static int wait_ids(zkr_service_cache_t *sc, const char *ids)
{
    want_ids_t w = {sc, ids};
    int ok = zkt_wait_for(ids_are, &w, WAIT_MS);
    if (!ok)
        printf("\n  ids: %s, not %s\n", ids_of(sc), ids);
    return ok;
}

static void test_cache(void)
{
    conn();
    char base[256], path[512];
    zkt_path("disc-c", base, sizeof base);
    zkr_discovery_t *d = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_discovery_new(&d, client, base), ZKR_OK);
    zkr_instance_t a, b;
    mk(&a, "web", "i-1", 80);
    mk(&b, "web", "i-2", 81);
    put_raw(base, &a, NULL, NULL);
    static rec_t r;
    memset(&r, 0, sizeof r);
    pthread_mutex_init(&r.mu, NULL);
    zkr_service_cache_t *sc = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_service_cache_new(&sc, d, "web"), ZKR_OK);
    zkr_discovery_free(d); /* the cache does not need it */
    r.sc = sc;
    CU_ASSERT_EQUAL(zkr_service_cache_set_listener(sc, on_service, &r), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_service_cache_wait_initialized(sc, 10), ZKR_ESTATE);
    CU_ASSERT_EQUAL(zkr_service_cache_start(sc), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_service_cache_start(sc), ZKR_ESTATE);
    CU_ASSERT_EQUAL(zkr_service_cache_wait_initialized(sc, WAIT_MS), ZKR_OK);
    CU_ASSERT_STRING_EQUAL(ids_of(sc), "i-1");
    CU_ASSERT(wait_events(&r, ZKR_SERVICE_INITIALIZED, NULL, 1));
    CU_ASSERT_EQUAL(count(&r, ZKR_SERVICE_ADDED, "i-1"), 1);

    put_raw(base, &b, NULL, NULL);
    CU_ASSERT(wait_events(&r, ZKR_SERVICE_ADDED, "i-2", 1));
    CU_ASSERT(wait_ids(sc, "i-1,i-2"));
    b.port = 91;
    put_raw(base, &b, NULL, NULL);
    CU_ASSERT(wait_events(&r, ZKR_SERVICE_UPDATED, "i-2", 1));
    pthread_mutex_lock(&r.mu);
    CU_ASSERT(r.n > 0 && r.type[r.n - 1] == ZKR_SERVICE_UPDATED && r.port[r.n - 1] == 91);
    pthread_mutex_unlock(&r.mu);
    /* a broken one: told with no instance, left out of the list */
    put_raw(base, NULL, "i-3", "{\"broken\":");
    CU_ASSERT(wait_events(&r, ZKR_SERVICE_ADDED, "i-3", 1));
    pthread_mutex_lock(&r.mu);
    CU_ASSERT(r.n > 0 && strcmp(r.id[r.n - 1], "-") == 0);
    pthread_mutex_unlock(&r.mu);
    CU_ASSERT_STRING_EQUAL(ids_of(sc), "i-1,i-2");
    snprintf(path, sizeof path, "%s/web/i-1", base);
    CU_ASSERT_EQUAL(zoo_delete(raw, path, -1), ZOK);
    CU_ASSERT(wait_events(&r, ZKR_SERVICE_REMOVED, "i-1", 1));
    CU_ASSERT(wait_ids(sc, "i-2"));
    pthread_mutex_lock(&r.mu);
    CU_ASSERT(r.n > 0 && strcmp(r.id[r.n - 1], "i-1") == 0 && r.port[r.n - 1] == 80);
    pthread_mutex_unlock(&r.mu);
    /* the listener freeing its own cache is refused */
    atomic_store(&r.free_own, 1);
    put_raw(base, &a, NULL, NULL);
    CU_ASSERT(wait_events(&r, ZKR_SERVICE_ADDED, "i-1", 2));
    CU_ASSERT_EQUAL(atomic_load(&r.free_own), 0);
    CU_ASSERT(wait_ids(sc, "i-1,i-2"));
    CU_ASSERT_EQUAL(atomic_load(&r.wrong), 0);
    zkr_service_cache_free(sc);
    CU_ASSERT_STRING_EQUAL(zkr_service_event_name(ZKR_SERVICE_REMOVED), "REMOVED");
    CU_ASSERT_STRING_EQUAL(zkr_service_event_name((zkr_service_event_type_t)0), "UNKNOWN");
}

/* ---- providers -------------------------------------------------------------------------------------- */

static char *pick_id(zkr_service_provider_t *p)
{
    zkr_instance_t *in = NULL;
    int rc = zkr_service_provider_pick(p, &in);
    static char buf[8][64];
    static int slot;
    char *s = buf[slot++ % 8];
    snprintf(s, 64, "%s", rc == ZKR_OK && in ? in->id : zkr_err_name(rc));
    zkr_instance_free(in);
    return s;
}

static void test_providers(void)
{
    conn();
    char base[256], path[512];
    zkt_path("disc-p", base, sizeof base);
    zkr_discovery_t *d = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_discovery_new(&d, client, base), ZKR_OK);
    zkr_service_cache_t *sc = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_service_cache_new(&sc, d, "web"), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_service_cache_start(sc), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_service_cache_wait_initialized(sc, WAIT_MS), ZKR_OK);
    zkr_service_provider_t *rr = NULL, *rnd = NULL, *st = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_service_provider_new(&rr, sc, ZKR_PROVIDER_ROUND_ROBIN), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_service_provider_new(&rnd, sc, ZKR_PROVIDER_RANDOM), ZKR_OK);
    CU_ASSERT_EQUAL_FATAL(zkr_service_provider_new(&st, sc, ZKR_PROVIDER_STICKY), ZKR_OK);
    /* none yet */
    CU_ASSERT_STRING_EQUAL(pick_id(rr), "ZKR_ENONODE");
    CU_ASSERT_STRING_EQUAL(pick_id(rnd), "ZKR_ENONODE");
    CU_ASSERT_STRING_EQUAL(pick_id(st), "ZKR_ENONODE");
    zkr_instance_t a, b, c, off;
    mk(&a, "web", "a", 1);
    mk(&b, "web", "b", 2);
    mk(&c, "web", "c", 3);
    mk(&off, "web", "d-off", 4);
    off.enabled = 0;
    put_raw(base, &c, NULL, NULL);
    put_raw(base, &a, NULL, NULL);
    put_raw(base, &b, NULL, NULL);
    put_raw(base, &off, NULL, NULL);
    put_raw(base, NULL, "b-broken", "[]");
    CU_ASSERT_FATAL(wait_ids(sc, "a,b,c,d-off"));
    /* round robin: in node-name order, disabled and broken skipped */
    char seq[64] = "";
    for (int i = 0; i < 6; i++)
        snprintf(seq + strlen(seq), sizeof seq - strlen(seq), "%s", pick_id(rr));
    CU_ASSERT_STRING_EQUAL(seq, "abcabc");
    /* random: only enabled ones, each of them over many picks */
    int seen[3] = {0, 0, 0};
    for (int i = 0; i < 300; i++) {
        const char *id = pick_id(rnd);
        CU_ASSERT(strcmp(id, "a") == 0 || strcmp(id, "b") == 0 || strcmp(id, "c") == 0);
        if (id[0] >= 'a' && id[0] <= 'c')
            seen[id[0] - 'a']++;
    }
    CU_ASSERT(seen[0] > 0 && seen[1] > 0 && seen[2] > 0);
    /* sticky: the first round-robin choice, kept while it is there */
    for (int i = 0; i < 5; i++)
        CU_ASSERT_STRING_EQUAL(pick_id(st), "a");
    b.port = 22; /* another instance's change does not move it */
    put_raw(base, &b, NULL, NULL);
    snprintf(path, sizeof path, "%s/web/a", base);
    CU_ASSERT_EQUAL(zoo_delete(raw, path, -1), ZOK);
    CU_ASSERT(wait_ids(sc, "b,c,d-off"));
    /* gone: the next round-robin choice (index 1 of b,c), then kept */
    CU_ASSERT_STRING_EQUAL(pick_id(st), "c");
    put_raw(base, &a, NULL, NULL);
    CU_ASSERT(wait_ids(sc, "a,b,c,d-off"));
    for (int i = 0; i < 5; i++)
        CU_ASSERT_STRING_EQUAL(pick_id(st), "c");
    /* disabled: left as if gone */
    c.enabled = 0;
    put_raw(base, &c, NULL, NULL);
    int64_t until = zkt_now_ms() + WAIT_MS;
    while (strcmp(pick_id(st), "c") == 0 && zkt_now_ms() < until)
        zkt_sleep_ms(20);
    CU_ASSERT_STRING_NOT_EQUAL(pick_id(st), "c");
    zkr_service_provider_free(rr);
    zkr_service_provider_free(rnd);
    zkr_service_provider_free(st);
    zkr_service_cache_free(sc);
    zkr_discovery_free(d);
}

/* ---- registering ------------------------------------------------------------------------------------ */

/* The node at path: its data (malloc'd, NUL-terminated) and stat; NULL if
 * there is none. */
static char *node_at(zhandle_t *zh, const char *path, struct Stat *st)
{
    char *buf = malloc(ZKR_INSTANCE_JSON_MAX + 1);
    int len = ZKR_INSTANCE_JSON_MAX;
    if (!buf)
        return NULL;
    if (zoo_get(zh, path, 0, buf, &len, st) != ZOK) {
        free(buf);
        return NULL;
    }
    buf[len < 0 ? 0 : len] = '\0';
    return buf;
}

static const char *inst_path(const char *base, const zkr_instance_t *in)
{
    static char buf[4][512];
    static int slot;
    char *s = buf[slot++ % 4];
    snprintf(s, 512, "%s/%s/%s", base, in->name, in->id);
    return s;
}

/* 1 if the node at path has in's JSON as its data and belongs to session
 * owner (0: persistent). */
static int holds(const char *path, const zkr_instance_t *in, int64_t owner)
{
    struct Stat st;
    char *data = node_at(raw, path, &st);
    char *want = dup_json(in);
    int ok = data && want && strcmp(data, want) == 0 && st.ephemeralOwner == owner;
    free(data);
    free(want);
    return ok;
}

typedef struct want_node {
    const char *path;
    const zkr_instance_t *in;
    zkr_client_t *c; /* owner: its session now; NULL: persistent */
} want_node_t;

static int holds_now(void *arg)
{
    want_node_t *w = arg;
    int64_t owner = 0;
    if (w->c && zkr_client_session(w->c, &owner, NULL) != ZKR_OK)
        return 0;
    return holds(w->path, w->in, owner);
}

/* 1 if name is Curator's protected sequential name for marker:
 * _c_<36-character uuid>-<marker><10 digits>. */
static int protected_seq(const char *name, const char *marker)
{
    size_t ml = strlen(marker), n = strlen(name);
    if (n != 3 + 36 + 1 + ml + 10 || strncmp(name, "_c_", 3) != 0 || name[39] != '-' ||
        strncmp(name + 40, marker, ml) != 0)
        return 0;
    for (size_t i = n - 10; i < n; i++)
        if (name[i] < '0' || name[i] > '9')
            return 0;
    return 1;
}

static void test_register(void)
{
    conn();
    char base[256];
    zkt_path("disc-r", base, sizeof base);
    zkr_discovery_t *d = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_discovery_new(&d, client, base), ZKR_OK);
    int64_t session = 0;
    CU_ASSERT_EQUAL(zkr_client_session(client, &session, NULL), ZKR_OK);
    zkr_instance_t a, b, p, q;
    mk(&a, "web", "dyn", 80);
    mk(&b, "web", "stat", 81);
    b.service_type = ZKR_SERVICE_STATIC;
    mk(&p, "web", "perm", 82);
    p.service_type = ZKR_SERVICE_PERMANENT;
    mk(&q, "web", "seq", 83);
    q.service_type = ZKR_SERVICE_DYNAMIC_SEQUENTIAL;
    CU_ASSERT_EQUAL(zkr_discovery_register(d, &a, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_discovery_register(d, &b, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_discovery_register(d, &p, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_discovery_register(d, &q, WAIT_MS), ZKR_OK);
    /* the modes of Curator's service types, our exact JSON */
    CU_ASSERT(holds(inst_path(base, &a), &a, session));
    CU_ASSERT(holds(inst_path(base, &b), &b, 0));
    CU_ASSERT(holds(inst_path(base, &p), &p, 0));
    char dir[300], seqpath[600] = "";
    snprintf(dir, sizeof dir, "%s/web", base);
    CU_ASSERT_EQUAL(zkt_count_children(raw, dir), 4);
    CU_ASSERT(zkt_newest_child(raw, dir, seqpath, sizeof seqpath) == 1 &&
              protected_seq(seqpath + strlen(dir) + 1, "seq"));
    CU_ASSERT(holds(seqpath, &q, session));
    /* the same name and id again: refused */
    CU_ASSERT_EQUAL(zkr_discovery_register(d, &a, WAIT_MS), ZKR_EALREADY);
    /* update: new data; the node's type stays the registered one */
    a.port = 8080;
    a.payload = "{\"v\":2}";
    a.service_type = ZKR_SERVICE_STATIC;
    CU_ASSERT_EQUAL(zkr_discovery_update(d, &a, WAIT_MS), ZKR_OK);
    a.service_type = ZKR_SERVICE_DYNAMIC;
    CU_ASSERT(holds(inst_path(base, &a), &a, session));
    q.port = 84;
    CU_ASSERT_EQUAL(zkr_discovery_update(d, &q, WAIT_MS), ZKR_OK);
    CU_ASSERT(holds(seqpath, &q, session));
    zkr_instance_t *one = NULL;
    CU_ASSERT_EQUAL(zkr_discovery_instance(d, "web", "dyn", &one, WAIT_MS), ZKR_OK);
    CU_ASSERT(one && equal(one, &a));
    zkr_instance_free(one);
    zkr_instance_t stranger;
    mk(&stranger, "web", "nobody", 1);
    CU_ASSERT_EQUAL(zkr_discovery_update(d, &stranger, WAIT_MS), ZKR_ENOTFOUND);
    /* unregister: that node only */
    CU_ASSERT_EQUAL(zkr_discovery_unregister(d, "web", "dyn"), ZKR_OK);
    CU_ASSERT_PTR_NULL(node_at(raw, inst_path(base, &a), NULL));
    CU_ASSERT_EQUAL(zkr_discovery_unregister(d, "web", "dyn"), ZKR_ENOTFOUND);
    CU_ASSERT_EQUAL(zkt_count_children(raw, dir), 3);
    /* registered again after an unregister */
    CU_ASSERT_EQUAL(zkr_discovery_register(d, &a, WAIT_MS), ZKR_OK);
    CU_ASSERT(holds(inst_path(base, &a), &a, session));
    /* free: every type unregistered, as Curator's close */
    zkr_discovery_free(d);
    CU_ASSERT_EQUAL(zkt_count_children(raw, dir), 0);
}

static void test_reregistered_after_expiry(void)
{
    conn();
    char base[256];
    zkt_path("disc-x", base, sizeof base);
    zkr_client_t *c = zkt_client(SESSION_MS);
    zkr_discovery_t *d = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_discovery_new(&d, c, base), ZKR_OK);
    zkr_instance_t a, s;
    mk(&a, "web", "me", 80);
    mk(&s, "web", "static", 81);
    s.service_type = ZKR_SERVICE_STATIC;
    CU_ASSERT_EQUAL(zkr_discovery_register(d, &a, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_discovery_register(d, &s, WAIT_MS), ZKR_OK);
    struct Stat before, after, sbefore, safter;
    free(node_at(raw, inst_path(base, &a), &before));
    free(node_at(raw, inst_path(base, &s), &sbefore));
    for (int round = 0; round < 2; round++) {
        zkt_expire_client(c, SESSION_MS);
        want_node_t w = {inst_path(base, &a), &a, c};
        CU_ASSERT(zkt_wait_for(holds_now, &w, WAIT_MS));
        free(node_at(raw, inst_path(base, &a), &after));
        CU_ASSERT(after.czxid != before.czxid); /* made again */
        before = after;
    }
    /* the persistent one was never touched */
    free(node_at(raw, inst_path(base, &s), &safter));
    CU_ASSERT(safter.czxid == sbefore.czxid && safter.version == sbefore.version);
    zkr_discovery_free(d);
    zkr_client_close(c);
}

static void test_other_session_same_id(void)
{
    conn();
    char base[256], path[512];
    zkt_path("disc-o", base, sizeof base);
    /* another process's instance "twin", ephemeral on its own session */
    zhandle_t *other = zkt_raw();
    zkr_instance_t theirs, mine, mine2;
    mk(&theirs, "web", "twin", 1);
    mk(&mine, "web", "twin", 2);
    mk(&mine2, "web", "twin2", 3);
    put_raw(base, NULL, "placeholder", "x"); /* (parents) */
    char *tj = dup_json(&theirs);
    snprintf(path, sizeof path, "%s/web/twin", base);
    CU_ASSERT_EQUAL(zoo_create(other, path, tj, (int)strlen(tj), &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL, NULL, 0), ZOK);
    snprintf(path, sizeof path, "%s/web/twin2", base);
    CU_ASSERT_EQUAL(zoo_create(other, path, tj, (int)strlen(tj), &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL, NULL, 0), ZOK);
    free(tj);
    int64_t owner = zoo_client_id(other)->client_id;
    zkr_discovery_t *d = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_discovery_new(&d, client, base), ZKR_OK);
    /* ours waits: theirs is neither deleted nor overwritten */
    CU_ASSERT_EQUAL(zkr_discovery_register(d, &mine, 1500), ZKR_ETIMEDOUT);
    CU_ASSERT_EQUAL(zkr_discovery_register(d, &mine2, 500), ZKR_ETIMEDOUT);
    zkt_sleep_ms(500);
    CU_ASSERT(holds(inst_path(base, &mine), &theirs, owner));
    CU_ASSERT(holds(inst_path(base, &mine2), &theirs, owner));
    /* an update while waiting writes nothing of theirs */
    mine.port = 22;
    int rc = zkr_discovery_update(d, &mine, 1000);
    CU_ASSERT(rc == ZKR_OK || rc == ZKR_ETIMEDOUT);
    CU_ASSERT(holds(inst_path(base, &mine), &theirs, owner));
    /* unregistering ours deletes nothing of theirs */
    CU_ASSERT_EQUAL(zkr_discovery_unregister(d, "web", "twin2"), ZKR_OK);
    CU_ASSERT(holds(inst_path(base, &mine2), &theirs, owner));
    /* theirs goes with its session: ours is made, with its latest data */
    zkt_raw_close(other);
    want_node_t w = {inst_path(base, &mine), &mine, client};
    CU_ASSERT(zkt_wait_for(holds_now, &w, WAIT_MS));
    snprintf(path, sizeof path, "%s/web/twin2", base);
    CU_ASSERT_PTR_NULL(node_at(raw, path, NULL));
    zkr_discovery_free(d);
    snprintf(path, sizeof path, "%s/web/placeholder", base);
    zoo_delete(raw, path, -1);
}

/* A service cache's listener (the client's callback thread) registers,
 * updates, queries and unregisters through the library: every call
 * answers (none waits for the callback thread). */
typedef struct from_cb {
    zkr_discovery_t *d;
    atomic_int done;
    int rc[5];
} from_cb_t;

static void on_added_call(zkr_service_cache_t *sc, const zkr_service_event_t *e, void *ctx)
{
    (void)sc;
    from_cb_t *f = ctx;
    if (e->type != ZKR_SERVICE_ADDED || !e->instance || strcmp(e->instance->id, "trigger") != 0)
        return;
    zkr_instance_t in;
    mk(&in, "web", "from-cb", 9);
    f->rc[0] = zkr_discovery_register(f->d, &in, WAIT_MS);
    in.port = 10;
    f->rc[1] = zkr_discovery_update(f->d, &in, WAIT_MS);
    zkr_instance_t *got = NULL;
    f->rc[2] = zkr_discovery_instance(f->d, "web", "from-cb", &got, WAIT_MS);
    f->rc[3] = got && got->port == 10 ? ZKR_OK : ZKR_EZOOKEEPER;
    zkr_instance_free(got);
    f->rc[4] = zkr_discovery_unregister(f->d, "web", "from-cb");
    atomic_store(&f->done, 1);
}

static void test_calls_from_listener(void)
{
    conn();
    char base[256];
    zkt_path("disc-cb", base, sizeof base);
    static from_cb_t f;
    memset(&f, 0, sizeof f);
    CU_ASSERT_EQUAL_FATAL(zkr_discovery_new(&f.d, client, base), ZKR_OK);
    zkr_service_cache_t *sc = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_service_cache_new(&sc, f.d, "web"), ZKR_OK);
    zkr_service_cache_set_listener(sc, on_added_call, &f);
    CU_ASSERT_EQUAL(zkr_service_cache_start(sc), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_service_cache_wait_initialized(sc, WAIT_MS), ZKR_OK);
    zkr_instance_t trigger;
    mk(&trigger, "web", "trigger", 1);
    CU_ASSERT_EQUAL(zkr_discovery_register(f.d, &trigger, WAIT_MS), ZKR_OK);
    CU_ASSERT(zkt_wait_for(zkt_flag_set, &f.done, 2 * WAIT_MS));
    for (int i = 0; i < 5; i++)
        CU_ASSERT_EQUAL(f.rc[i], ZKR_OK);
    char path[512];
    snprintf(path, sizeof path, "%s/web/from-cb", base);
    CU_ASSERT_PTR_NULL(node_at(raw, path, NULL));
    zkr_service_cache_free(sc);
    zkr_discovery_free(f.d);
}

/* A stalled link (a proxy that moves no byte, shorter than the session):
 * every call keeps its timeout; once the link moves again, what was
 * registered meanwhile is there. */
static void test_stalled_link(void)
{
    conn();
    char base[256];
    zkt_path("disc-st", base, sizeof base);
    zkt_proxy_t *px = zkt_proxy_start(zkt_server_port());
    CU_ASSERT_FATAL(px != NULL);
    zkr_client_t *c = zkt_client_at(zkt_proxy_hosts(px), 20000);
    zkr_discovery_t *d = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_discovery_new(&d, c, base), ZKR_OK);
    zkr_instance_t a, b;
    mk(&a, "web", "a", 1);
    mk(&b, "web", "b", 2);
    CU_ASSERT_EQUAL(zkr_discovery_register(d, &a, WAIT_MS), ZKR_OK);
    put_raw(base, NULL, "other", "{\"name\":\"web\",\"id\":\"other\"}");
    CU_ASSERT_EQUAL(zkt_proxy_stall(px, 1), 0);
    struct {
        const char *what;
        int rc;
        int64_t ms;
    } r[6];
    int64_t t;
    char **names = NULL;
    zkr_instance_t **v = NULL, *one = NULL;
    size_t n = 0;
#define TIMED(i, label, call) (t = zkt_now_ms(), r[i].rc = (call), r[i].ms = zkt_now_ms() - t, r[i].what = label)
    TIMED(0, "names", zkr_discovery_names(d, &names, &n, 800));
    TIMED(1, "instances", zkr_discovery_instances(d, "web", &v, &n, 800));
    TIMED(2, "instance", zkr_discovery_instance(d, "web", "a", &one, 800));
    TIMED(3, "register", zkr_discovery_register(d, &b, 800));
    a.port = 11;
    TIMED(4, "update", zkr_discovery_update(d, &a, 800));
    TIMED(5, "unregister", zkr_discovery_unregister(d, "web", "a"));
#undef TIMED
    for (int i = 0; i < 6; i++) {
        printf("\n    stalled: %s %s in %lld ms", r[i].what, zkr_err_name(r[i].rc), (long long)r[i].ms);
        CU_ASSERT(r[i].ms < (i == 5 ? ZKR_RELEASE_WAIT_MS + 1500 : 800 + 1500));
    }
    for (int i = 0; i < 5; i++)
        CU_ASSERT(r[i].rc == ZKR_ETIMEDOUT || r[i].rc == ZKR_ECONNLOSS);
    CU_ASSERT_EQUAL(r[5].rc, ZKR_OK); /* (finished in the background) */
    CU_ASSERT(names == NULL && v == NULL && one == NULL);
    CU_ASSERT_EQUAL(zkt_proxy_stall(px, 0), 0);
    /* moving again: b made, a deleted (its delete finished), theirs kept */
    want_node_t w = {inst_path(base, &b), &b, c};
    CU_ASSERT(zkt_wait_for(holds_now, &w, WAIT_MS));
    char path[512];
    snprintf(path, sizeof path, "%s/web/a", base);
    int64_t until = zkt_now_ms() + WAIT_MS;
    char *left = NULL;
    while ((left = node_at(raw, path, NULL)) != NULL && zkt_now_ms() < until) {
        free(left);
        zkt_sleep_ms(50);
    }
    CU_ASSERT_PTR_NULL(left);
    free(left);
    snprintf(path, sizeof path, "%s/web/other", base);
    char *theirs = node_at(raw, path, NULL);
    CU_ASSERT_PTR_NOT_NULL(theirs);
    free(theirs);
    zkr_discovery_free(d);
    zkr_client_close(c);
    zkt_proxy_stop(px);
}

/* A discovery on a client through a proxy, web/a registered, then the
 * link stalled. */
typedef struct stalled {
    zkt_proxy_t *px;
    zkr_client_t *c;
    zkr_discovery_t *d;
} stalled_t;

static void stalled_start(stalled_t *st, const char *name, zkr_instance_t *a)
{
    conn();
    char base[256];
    zkt_path(name, base, sizeof base);
    st->px = zkt_proxy_start(zkt_server_port());
    CU_ASSERT_FATAL(st->px != NULL);
    st->c = zkt_client_at(zkt_proxy_hosts(st->px), 20000);
    st->d = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_discovery_new(&st->d, st->c, base), ZKR_OK);
    mk(a, "web", "a", 1);
    CU_ASSERT_EQUAL(zkr_discovery_register(st->d, a, WAIT_MS), ZKR_OK);
    CU_ASSERT_EQUAL(zkt_proxy_stall(st->px, 1), 0);
}

/* An update waiting (no timeout) on a stalled link, and an unregister from
 * another thread: the unregister keeps its bound (ZKR_RELEASE_WAIT_MS, the
 * delete finished in the background) and the update ends, not found. */
typedef struct upd_arg {
    zkr_discovery_t *d;
    zkr_instance_t *inst;
    atomic_int rc;
    atomic_int done;
} upd_arg_t;

static void *update_forever(void *arg)
{
    upd_arg_t *u = arg;
    atomic_store(&u->rc, zkr_discovery_update(u->d, u->inst, -1));
    atomic_store(&u->done, 1);
    return NULL;
}

static int upd_done(void *arg)
{
    return atomic_load(&((upd_arg_t *)arg)->done);
}

static void test_unregister_during_update(void)
{
    zkr_instance_t a;
    stalled_t st;
    stalled_start(&st, "disc-upd", &a);
    zkr_discovery_t *d = st.d;
    a.port = 12;
    upd_arg_t u = {d, &a, -1, 0};
    pthread_t th;
    CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, update_forever, &u), 0);
    zkt_sleep_ms(300); /* (the update waits for its write) */
    int64_t t = zkt_now_ms();
    int rc = zkr_discovery_unregister(d, "web", "a");
    int64_t ms = zkt_now_ms() - t;
    printf("\n    unregister during a stalled update: %s in %lld ms", zkr_err_name(rc), (long long)ms);
    CU_ASSERT_EQUAL(rc, ZKR_OK);
    CU_ASSERT(ms < ZKR_RELEASE_WAIT_MS + 1500);
    CU_ASSERT(zkt_wait_for(upd_done, &u, WAIT_MS)); /* (else it ends once the link moves) */
    CU_ASSERT_EQUAL(zkt_proxy_stall(st.px, 0), 0);
    pthread_join(th, NULL);
    CU_ASSERT_EQUAL(atomic_load(&u.rc), ZKR_ENOTFOUND);
    zkr_discovery_free(d);
    zkr_client_close(st.c);
    zkt_proxy_stop(st.px);
}

/* The client closed while queries wait (no timeout) on a stalled link:
 * they return ZKR_ECLOSED at once and close keeps its bound (client.h:
 * 1 s for the answers in flight, 1.5 s for the server), instead of both
 * waiting for the C client to give up on the link (2/3 of the session). */
typedef struct query_arg {
    zkr_discovery_t *d;
    int which;
    atomic_int rc;
    atomic_llong at;
} query_arg_t;

static void *query_forever(void *arg)
{
    query_arg_t *q = arg;
    char **names = NULL;
    zkr_instance_t **v = NULL, *one = NULL;
    size_t n = 0;
    int rc = q->which == 0   ? zkr_discovery_names(q->d, &names, &n, -1)
             : q->which == 1 ? zkr_discovery_instances(q->d, "web", &v, &n, -1)
                             : zkr_discovery_instance(q->d, "web", "a", &one, -1);
    zkr_strings_free(names, n);
    if (v)
        zkr_instances_free(v, n);
    zkr_instance_free(one);
    atomic_store(&q->at, (long long)zkt_now_ms());
    atomic_store(&q->rc, rc);
    return NULL;
}

static void test_close_during_queries(void)
{
    zkr_instance_t a;
    stalled_t st;
    stalled_start(&st, "disc-close", &a);
    zkr_discovery_t *d = st.d;
    query_arg_t q[3];
    pthread_t th[3];
    for (int i = 0; i < 3; i++) {
        q[i].d = d;
        q[i].which = i;
        atomic_init(&q[i].rc, 1);
        atomic_init(&q[i].at, 0);
        CU_ASSERT_EQUAL_FATAL(pthread_create(&th[i], NULL, query_forever, &q[i]), 0);
    }
    zkt_sleep_ms(500); /* (they wait for their answers) */
    int64_t t = zkt_now_ms();
    CU_ASSERT_EQUAL(zkr_client_close(st.c), ZKR_OK);
    int64_t ms = zkt_now_ms() - t;
    printf("\n    close during stalled queries: %lld ms", (long long)ms);
    CU_ASSERT(ms < 1000 + 1500 + 1500);
    for (int i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        printf("\n    query %d: %s after %lld ms", i, zkr_err_name(atomic_load(&q[i].rc)),
               (long long)(atomic_load(&q[i].at) - t));
        CU_ASSERT_EQUAL(atomic_load(&q[i].rc), ZKR_ECLOSED);
    }
    zkr_discovery_free(d);
    zkt_proxy_stop(st.px);
}

static void test_register_bad_input(void)
{
    conn();
    zkr_discovery_t *d = NULL;
    CU_ASSERT_EQUAL_FATAL(zkr_discovery_new(&d, client, "/zkr-test/disc-rbad"), ZKR_OK);
    zkr_instance_t in;
    mk(&in, "web", "x", 1);
    CU_ASSERT_EQUAL(zkr_discovery_register(NULL, &in, 100), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_discovery_register(d, NULL, 100), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_discovery_update(NULL, &in, 100), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_discovery_update(d, NULL, 100), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_discovery_unregister(NULL, "web", "x"), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_discovery_unregister(d, NULL, "x"), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_discovery_unregister(d, "web", NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_discovery_unregister(d, "web", "x"), ZKR_ENOTFOUND);
    zkr_instance_t bad = in;
    bad.port = 70000;
    CU_ASSERT_EQUAL(zkr_discovery_register(d, &bad, 100), ZKR_EINVAL);
    bad = in;
    bad.name = "a/b";
    CU_ASSERT_EQUAL(zkr_discovery_register(d, &bad, 100), ZKR_EINVAL);
    bad = in;
    bad.size = 4;
    CU_ASSERT_EQUAL(zkr_discovery_register(d, &bad, 100), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_discovery_update(d, &bad, 100), ZKR_EINVAL);
    /* a registered one updated with bad data: refused, nothing written */
    CU_ASSERT_EQUAL(zkr_discovery_register(d, &in, WAIT_MS), ZKR_OK);
    bad = in;
    bad.payload = "{oops";
    CU_ASSERT_EQUAL(zkr_discovery_update(d, &bad, 100), ZKR_EINVAL);
    CU_ASSERT(holds(inst_path("/zkr-test/disc-rbad", &in), &in, 0) == 0); /* ephemeral: not owner 0 */
    int64_t session = 0;
    zkr_client_session(client, &session, NULL);
    CU_ASSERT(holds(inst_path("/zkr-test/disc-rbad", &in), &in, session));
    zkr_discovery_free(d);
}

/* ---- bad input ---------------------------------------------------------------------------------------- */

static void test_bad_input(void)
{
    conn();
    zkr_discovery_t *d = (zkr_discovery_t *)1;
    CU_ASSERT_EQUAL(zkr_discovery_new(&d, NULL, "/s"), ZKR_EINVAL);
    CU_ASSERT_PTR_NULL(d);
    CU_ASSERT_EQUAL(zkr_discovery_new(NULL, client, "/s"), ZKR_EINVAL);
    const char *paths[] = {NULL, "", "/", "s", "/s/", "/zookeeper/x", "/a//b", "/a/./b"};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
        CU_ASSERT_EQUAL(zkr_discovery_new(&d, client, paths[i]), ZKR_EINVAL);
    CU_ASSERT_EQUAL_FATAL(zkr_discovery_new(&d, client, "/zkr-test/disc-bad"), ZKR_OK);
    char **names = NULL;
    size_t n = 0;
    zkr_instance_t **v = NULL, *one = NULL;
    CU_ASSERT_EQUAL(zkr_discovery_names(NULL, &names, &n, 100), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_discovery_names(d, NULL, &n, 100), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_discovery_names(d, &names, NULL, 100), ZKR_EINVAL);
    const char *segs[] = {NULL, "", ".", "..", "a/b", "\x01", "\xc3("};
    for (size_t i = 0; i < sizeof segs / sizeof segs[0]; i++) {
        CU_ASSERT_EQUAL(zkr_discovery_instances(d, segs[i], &v, &n, 100), ZKR_EINVAL);
        CU_ASSERT_EQUAL(zkr_discovery_instance(d, segs[i], "x", &one, 100), ZKR_EINVAL);
        CU_ASSERT_EQUAL(zkr_discovery_instance(d, "x", segs[i], &one, 100), ZKR_EINVAL);
        zkr_service_cache_t *sc = (zkr_service_cache_t *)1;
        CU_ASSERT_EQUAL(zkr_service_cache_new(&sc, d, segs[i]), ZKR_EINVAL);
        CU_ASSERT_PTR_NULL(sc);
    }
    CU_ASSERT_EQUAL(zkr_discovery_instances(NULL, "x", &v, &n, 100), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_discovery_instance(d, "x", "y", NULL, 100), ZKR_EINVAL);
    zkr_service_cache_t *sc = NULL;
    CU_ASSERT_EQUAL(zkr_service_cache_new(&sc, NULL, "x"), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_service_cache_new(NULL, d, "x"), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_service_cache_set_listener(NULL, NULL, NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_service_cache_start(NULL), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_service_cache_wait_initialized(NULL, 1), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_service_cache_instances(NULL, &v, &n), ZKR_EINVAL);
    CU_ASSERT_EQUAL_FATAL(zkr_service_cache_new(&sc, d, "x"), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_service_cache_instances(sc, NULL, &n), ZKR_EINVAL);
    zkr_service_provider_t *p = (zkr_service_provider_t *)1;
    CU_ASSERT_EQUAL(zkr_service_provider_new(&p, NULL, ZKR_PROVIDER_RANDOM), ZKR_EINVAL);
    CU_ASSERT_PTR_NULL(p);
    CU_ASSERT_EQUAL(zkr_service_provider_new(&p, sc, (zkr_provider_strategy_t)3), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_service_provider_new(&p, sc, (zkr_provider_strategy_t)-1), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_service_provider_new(NULL, sc, ZKR_PROVIDER_RANDOM), ZKR_EINVAL);
    CU_ASSERT_EQUAL(zkr_service_provider_pick(NULL, &one), ZKR_EINVAL);
    CU_ASSERT_EQUAL_FATAL(zkr_service_provider_new(&p, sc, ZKR_PROVIDER_STICKY), ZKR_OK);
    CU_ASSERT_EQUAL(zkr_service_provider_pick(p, NULL), ZKR_EINVAL);
    /* never started: an empty list, nothing to pick */
    CU_ASSERT_EQUAL(zkr_service_cache_instances(sc, &v, &n), ZKR_OK);
    CU_ASSERT(v == NULL && n == 0);
    CU_ASSERT_EQUAL(zkr_service_provider_pick(p, &one), ZKR_ENONODE);
    zkr_service_provider_free(p);
    zkr_service_provider_free(NULL);
    zkr_service_cache_free(sc);
    zkr_service_cache_free(NULL);
    zkr_discovery_free(d);
    zkr_discovery_free(NULL);
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("discovery codec", NULL, NULL);
    CU_add_test(s, "Curator's exact bytes written and read (Map payload, nulls)", test_codec_curator_bytes);
    CU_add_test(s, "round trips: payload kinds, disabled, empty uriSpec, UTF-8; copies", test_codec_round_trips);
    CU_add_test(s, "reading: unknown members, defaults, malformed and oversized data refused", test_codec_reading);
    CU_add_test(s, "writing: bad instances refused with ZKR_EINVAL", test_codec_bad_input);
    s = CU_add_suite("discovery", NULL, teardown);
    CU_add_test(s, "queries: names, instances in node order (broken ones left out), one instance", test_queries);
    CU_add_test(s, "service cache: added, updated, removed with the instance; broken data; lists", test_cache);
    CU_add_test(s, "providers: round robin order, random spread, sticky kept while there and enabled",
                test_providers);
    CU_add_test(s, "register: Curator's modes per type, our exact JSON; again refused; update keeps the type; "
                   "unregister; free unregisters every type",
                test_register);
    CU_add_test(s, "a forced expiry (twice): registered again on the new session; a persistent one untouched",
                test_reregistered_after_expiry);
    CU_add_test(s, "another session's instance with our id: never deleted nor overwritten; ours made once it goes",
                test_other_session_same_id);
    CU_add_test(s, "a service cache's listener registers, updates, reads and unregisters: every call answers",
                test_calls_from_listener);
    CU_add_test(s, "a stalled link: every call keeps its timeout; once it moves, the registration is made",
                test_stalled_link);
    CU_add_test(s, "an unregister while another thread's update waits on a stalled link: bounded; the update "
                   "ends, not found",
                test_unregister_during_update);
    CU_add_test(s, "the client closed while queries wait on a stalled link: ZKR_ECLOSED, close bounded",
                test_close_during_queries);
    CU_add_test(s, "register, update, unregister: bad input and NULL", test_register_bad_input);
    CU_add_test(s, "bad input and NULL: the documented codes", test_bad_input);
}

int main(void)
{
    return zkt_main("test_discovery", add_suites);
}

/* Service instances (include/zkr/discovery.h) and their JSON, exactly as
 * curator-x-discovery's default JsonInstanceSerializer (5.x) writes it:
 * the members in OldServiceInstance's order, nulls written, no "enabled"
 * member unless false; read with jansson, unknown members ignored, every
 * member's type checked (the data comes from the server: untrusted). */
#include "config.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "recipes/discovery_private.h"
#include "util/util.h"
#include "zkr/errors.h"

#define SEGMENT_MAX 255

static const char *const type_names[] = {"DYNAMIC", "STATIC", "PERMANENT", "DYNAMIC_SEQUENTIAL"};
#define TYPE_COUNT (sizeof type_names / sizeof type_names[0])

const char *zkr_service_type_name(zkr_service_type_t type)
{
    return (unsigned)type < TYPE_COUNT ? type_names[type] : "UNKNOWN";
}

int zkr__disc_segment_valid(const char *s)
{
    if (!s || !*s || strlen(s) > SEGMENT_MAX || strchr(s, '/'))
        return 0;
    char buf[SEGMENT_MAX + 4] = "/x/";
    strcat(buf, s);
    return zkr__path_valid(buf);
}

char *zkr__disc_path(const char *base, const char *name, const char *id)
{
    char *p = zkr__path_join(base, name);
    if (!p || !id)
        return p;
    char *full = zkr__path_join(p, id);
    free(p);
    return full;
}

int zkr_instance_init_size(zkr_instance_t *inst, size_t size)
{
    if (!inst || size < sizeof(zkr_instance_t))
        return ZKR_EINVAL;
    memset(inst, 0, sizeof *inst);
    inst->size = sizeof *inst;
    if (zkr__uuid(inst->id_buf) != 0)
        return ZKR_ESYSTEM;
    struct timeval tv;
    gettimeofday(&tv, NULL);
    inst->id = inst->id_buf;
    inst->port = -1;
    inst->ssl_port = -1;
    inst->registration_time_utc = (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
    inst->service_type = ZKR_SERVICE_DYNAMIC;
    inst->enabled = 1;
    return ZKR_OK;
}

/* ---- one block ------------------------------------------------------------------ */

static size_t slen(const char *s)
{
    return s ? strlen(s) + 1 : 0;
}

static const char *put(char **at, const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    memcpy(*at, s, n);
    const char *r = *at;
    *at += n;
    return r;
}

int zkr_instance_copy(const zkr_instance_t *inst, zkr_instance_t **copy)
{
    if (copy)
        *copy = NULL;
    if (!inst || !copy || inst->size < sizeof *inst || !inst->name || !inst->id ||
        (!inst->uri_parts && inst->uri_part_count > 0) || inst->uri_part_count > ZKR_INSTANCE_JSON_MAX)
        return ZKR_EINVAL;
    size_t n = sizeof *inst + inst->uri_part_count * sizeof(zkr_uri_part_t);
    n += slen(inst->name) + slen(inst->id) + slen(inst->address) + slen(inst->payload);
    for (size_t i = 0; i < inst->uri_part_count; i++) {
        if (!inst->uri_parts[i].value)
            return ZKR_EINVAL;
        n += slen(inst->uri_parts[i].value);
    }
    zkr_instance_t *c = malloc(n);
    if (!c)
        return ZKR_ENOMEM;
    *c = *inst;
    c->size = sizeof *c;
    zkr_uri_part_t *parts = (zkr_uri_part_t *)(c + 1);
    char *at = (char *)(parts + inst->uri_part_count);
    c->name = put(&at, inst->name);
    c->id = put(&at, inst->id);
    c->address = put(&at, inst->address);
    c->payload = put(&at, inst->payload);
    for (size_t i = 0; i < inst->uri_part_count; i++) {
        parts[i].value = put(&at, inst->uri_parts[i].value);
        parts[i].variable = inst->uri_parts[i].variable != 0;
    }
    c->uri_parts = inst->uri_parts ? parts : NULL;
    c->enabled = inst->enabled != 0;
    memset(c->id_buf, 0, sizeof c->id_buf);
    *copy = c;
    return ZKR_OK;
}

void zkr_instance_free(zkr_instance_t *inst)
{
    free(inst);
}

void zkr_instances_free(zkr_instance_t **insts, size_t count)
{
    if (!insts)
        return;
    for (size_t i = 0; i < count; i++)
        free(insts[i]);
    free(insts);
}

/* ---- writing ------------------------------------------------------------------------ */

/* A JSON string, or null for NULL; *bad set for text that is not UTF-8. */
static json_t *str_or_null(const char *s, int *bad)
{
    if (!s)
        return json_null();
    if (!zkr__utf8_valid(s, strlen(s))) {
        *bad = 1;
        return NULL;
    }
    return json_string(s);
}

static json_t *port_or_null(int32_t port, int *bad)
{
    if (port == -1)
        return json_null();
    if (port < 0 || port > 65535) {
        *bad = 1;
        return NULL;
    }
    return json_integer(port);
}

static json_t *uri_spec(const zkr_instance_t *inst, int *bad)
{
    if (!inst->uri_parts) {
        if (inst->uri_part_count > 0)
            *bad = 1;
        return *bad ? NULL : json_null();
    }
    json_t *parts = json_array();
    for (size_t i = 0; parts && i < inst->uri_part_count; i++) {
        json_t *part = json_object();
        json_t *v = inst->uri_parts[i].value ? str_or_null(inst->uri_parts[i].value, bad) : (*bad = 1, NULL);
        if (!part || !v || json_object_set_new(part, "value", v) != 0 ||
            json_object_set_new(part, "variable", json_boolean(inst->uri_parts[i].variable)) != 0 ||
            json_array_append_new(parts, part) != 0) {
            if (!part)
                json_decref(v);
            json_decref(part);
            json_decref(parts);
            return NULL;
        }
    }
    json_t *spec = parts ? json_object() : NULL;
    if (!spec || json_object_set_new(spec, "parts", parts) != 0) {
        json_decref(spec);
        return NULL;
    }
    return spec;
}

static int set(json_t *o, const char *key, json_t *v)
{
    return v ? json_object_set_new(o, key, v) : -1;
}

/* The object, in Curator's member order; NULL with *bad set for bad
 * input, NULL alone for no memory. */
static json_t *to_object(const zkr_instance_t *inst, int *bad)
{
    if (!zkr__disc_segment_valid(inst->name) || !zkr__disc_segment_valid(inst->id) ||
        (inst->address && strlen(inst->address) > ZKR_INSTANCE_ADDRESS_MAX) ||
        (unsigned)inst->service_type >= TYPE_COUNT) {
        *bad = 1;
        return NULL;
    }
    json_t *payload = json_null();
    if (inst->payload) {
        json_error_t err;
        payload = json_loads(inst->payload, JSON_DECODE_ANY, &err);
        if (!payload) {
            *bad = 1;
            return NULL;
        }
    }
    json_t *o = json_object();
    if (!o || set(o, "name", str_or_null(inst->name, bad)) || set(o, "id", str_or_null(inst->id, bad)) ||
        set(o, "address", str_or_null(inst->address, bad)) || set(o, "port", port_or_null(inst->port, bad)) ||
        set(o, "sslPort", port_or_null(inst->ssl_port, bad)) || set(o, "payload", json_incref(payload)) ||
        set(o, "registrationTimeUTC", json_integer(inst->registration_time_utc)) ||
        set(o, "serviceType", json_string(type_names[inst->service_type])) ||
        set(o, "uriSpec", uri_spec(inst, bad)) || (!inst->enabled && set(o, "enabled", json_false()))) {
        json_decref(o);
        o = NULL;
    }
    json_decref(payload);
    return o;
}

int zkr_instance_to_json(const zkr_instance_t *inst, char **json, size_t *json_len)
{
    if (json)
        *json = NULL;
    if (json_len)
        *json_len = 0;
    if (!inst || !json || !json_len || inst->size < sizeof *inst)
        return ZKR_EINVAL;
    int bad = 0;
    json_t *o = to_object(inst, &bad);
    if (!o)
        return bad ? ZKR_EINVAL : ZKR_ENOMEM;
    char *text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (!text)
        return ZKR_ENOMEM;
    size_t n = strlen(text);
    if (n > ZKR_INSTANCE_JSON_MAX) {
        free(text);
        return ZKR_EINVAL;
    }
    *json = text;
    *json_len = n;
    return ZKR_OK;
}

/* ---- reading -------------------------------------------------------------------------- */

/* A member that may be absent or null (*out NULL), else a string. */
static int opt_string(json_t *o, const char *key, const char **out)
{
    json_t *v = json_object_get(o, key);
    *out = NULL;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return -1;
    *out = json_string_value(v);
    return 0;
}

static int opt_port(json_t *o, const char *key, int32_t *out)
{
    json_t *v = json_object_get(o, key);
    *out = -1;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 65535)
        return -1;
    *out = (int32_t)json_integer_value(v);
    return 0;
}

static int read_type(json_t *o, zkr_service_type_t *out)
{
    json_t *v = json_object_get(o, "serviceType");
    *out = ZKR_SERVICE_DYNAMIC; /* absent: Curator's default */
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return -1;
    for (size_t i = 0; i < TYPE_COUNT; i++)
        if (strcmp(json_string_value(v), type_names[i]) == 0) {
            *out = (zkr_service_type_t)i;
            return 0;
        }
    return -1;
}

/* uriSpec: null, or {"parts":[{"value":s,"variable":b}...]} (a part's
 * members as Curator's Part: absent ones "" and false). */
static int read_uri(json_t *o, zkr_instance_t *t, zkr_uri_part_t **parts)
{
    json_t *spec = json_object_get(o, "uriSpec");
    if (!spec || json_is_null(spec))
        return 0;
    json_t *arr = json_is_object(spec) ? json_object_get(spec, "parts") : NULL;
    if (!json_is_object(spec) || (arr && !json_is_array(arr) && !json_is_null(arr)))
        return -1;
    size_t n = json_is_array(arr) ? json_array_size(arr) : 0;
    *parts = calloc(n + 1, sizeof **parts);
    if (!*parts)
        return -2;
    for (size_t i = 0; i < n; i++) {
        json_t *p = json_array_get(arr, i);
        json_t *v = json_is_object(p) ? json_object_get(p, "value") : NULL;
        json_t *var = json_is_object(p) ? json_object_get(p, "variable") : NULL;
        if (!json_is_object(p) || (v && !json_is_string(v)) || (var && !json_is_boolean(var)))
            return -1;
        (*parts)[i].value = v ? json_string_value(v) : "";
        (*parts)[i].variable = var && json_is_true(var);
    }
    t->uri_parts = *parts;
    t->uri_part_count = n;
    return 0;
}

static int from_object(json_t *o, zkr_instance_t **inst)
{
    zkr_instance_t t;
    memset(&t, 0, sizeof t);
    t.size = sizeof t;
    json_t *name = json_object_get(o, "name"), *id = json_object_get(o, "id");
    json_t *time = json_object_get(o, "registrationTimeUTC"), *en = json_object_get(o, "enabled");
    json_t *payload = json_object_get(o, "payload");
    if (!json_is_string(name) || !json_is_string(id) || opt_string(o, "address", &t.address) ||
        opt_port(o, "port", &t.port) || opt_port(o, "sslPort", &t.ssl_port) || read_type(o, &t.service_type) ||
        (time && !json_is_integer(time) && !json_is_null(time)) || (en && !json_is_boolean(en) && !json_is_null(en)))
        return ZKR_EBADDATA;
    t.name = json_string_value(name);
    t.id = json_string_value(id);
    t.registration_time_utc = json_is_integer(time) ? json_integer_value(time) : 0;
    t.enabled = !json_is_false(en);
    char *text = NULL;
    if (payload && !json_is_null(payload) && !(text = json_dumps(payload, JSON_COMPACT | JSON_ENCODE_ANY)))
        return ZKR_ENOMEM;
    t.payload = text;
    zkr_uri_part_t *parts = NULL;
    int r = read_uri(o, &t, &parts);
    int rc = r == -1 ? ZKR_EBADDATA : r == -2 ? ZKR_ENOMEM : zkr_instance_copy(&t, inst);
    free(parts);
    free(text);
    return rc;
}

int zkr__disc_parse(const char *data, size_t len, zkr_instance_t **inst)
{
    *inst = NULL;
    if (!data || len == 0 || len > ZKR_INSTANCE_JSON_MAX)
        return ZKR_EBADDATA;
    json_error_t err;
    json_t *o = json_loadb(data, len, 0, &err);
    if (!o)
        return ZKR_EBADDATA; /* (or no memory: jansson does not say which) */
    int rc = json_is_object(o) ? from_object(o, inst) : ZKR_EBADDATA;
    json_decref(o);
    return rc;
}

int zkr_instance_from_json(const char *json, size_t len, zkr_instance_t **inst)
{
    if (inst)
        *inst = NULL;
    if (!json || !inst)
        return ZKR_EINVAL;
    return zkr__disc_parse(json, len, inst);
}

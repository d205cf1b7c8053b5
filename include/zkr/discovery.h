/* Service discovery in curator-x-discovery's format: services register
 * instances (an address, ports, a payload) under a base path; clients
 * list them, follow them with a service cache, and pick one with a
 * provider (Curator's ServiceDiscovery, ServiceInstance, ServiceCache,
 * ServiceProvider).
 *
 *   zkr_instance_t me;
 *   zkr_instance_init(&me);              (a fresh UUID id, now, DYNAMIC)
 *   me.name = "web";
 *   me.address = "10.0.0.7";
 *   me.port = 8080;
 *   zkr_discovery_new(&d, c, "/services");
 *   zkr_discovery_register(d, &me, 5000);
 *   ...
 *   zkr_service_cache_new(&sc, d, "web");
 *   zkr_service_cache_start(sc);
 *   zkr_service_cache_wait_initialized(sc, 5000);
 *   zkr_service_provider_new(&p, sc, ZKR_PROVIDER_ROUND_ROBIN);
 *   zkr_service_provider_pick(p, &inst);   (zkr_instance_free(inst))
 *
 * Rules (beyond <zkr/common.h>'s):
 *  - Wire format: an instance is the node <base>/<name>/<id> (ephemeral for
 *    DYNAMIC, persistent for STATIC and PERMANENT, as Curator), its data
 *    the JSON Curator's default JsonInstanceSerializer writes: the members
 *    name, id, address, port, sslPort, payload, registrationTimeUTC,
 *    serviceType, uriSpec, in that order, absent values as null; no
 *    "enabled" member (Curator 5's default serializer leaves it out for
 *    older readers; it is read when present, true when absent).
 *    DYNAMIC_SEQUENTIAL instances are ephemeral sequential nodes with
 *    Curator's protected name, <base>/<name>/_c_<uuid>-<id><seq> (Curator
 *    itself names them <id><seq>; readers of either list children, so both
 *    read each other's).  Missing parents are made as containers.
 *  - A registration is a zkr_pnode (zkr/pnode.h): made again after a lost
 *    session; a node already at the path is taken over only if it is ours
 *    (this session's ephemeral node, or a persistent one); another
 *    process's instance with the same id is never deleted nor overwritten
 *    (Curator deletes it and creates its own): the registration waits for
 *    it to go.
 *  - Reading: unknown members are ignored; data that is not such JSON (or
 *    over ZKR_INSTANCE_JSON_MAX bytes) makes that instance unreadable:
 *    ZKR_EBADDATA for it alone, left out of lists (logged once per change
 *    by a service cache). */
#ifndef ZKR_DISCOVERY_H
#define ZKR_DISCOVERY_H

#include "zkr/client.h"
#include "zkr/common.h"
#include "zkr/errors.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Curator's ServiceType. */
typedef enum zkr_service_type {
    ZKR_SERVICE_DYNAMIC = 0,           /* ephemeral: goes with the session */
    ZKR_SERVICE_STATIC = 1,            /* persistent */
    ZKR_SERVICE_PERMANENT = 2,         /* persistent */
    ZKR_SERVICE_DYNAMIC_SEQUENTIAL = 3 /* ephemeral, sequential */
} zkr_service_type_t;

/* One part of Curator's UriSpec: a literal text, or (variable 1) the name
 * of a value filled in when the URI is built ("scheme", "port", ...). */
typedef struct zkr_uri_part {
    const char *value;
    int variable;
} zkr_uri_part_t;

/* The longest address, and the longest instance JSON read or written. */
#define ZKR_INSTANCE_ADDRESS_MAX 1024
#define ZKR_INSTANCE_JSON_MAX (256 * 1024)

/* An instance (Curator's ServiceInstance).  The program fills one to
 * register it (its strings stay the program's; the library copies them);
 * instances the library hands out (zkr_instance_t *) are one block each,
 * the caller's, freed with zkr_instance_free. */
typedef struct zkr_instance {
    size_t size;                     /* set by zkr_instance_init */
    const char *name;                /* the service: one path segment */
    const char *id;                  /* one path segment; init: a fresh UUID (id_buf) */
    const char *address;             /* NULL: null; at most ZKR_INSTANCE_ADDRESS_MAX bytes */
    int32_t port;                    /* 0..65535; -1: null (init) */
    int32_t ssl_port;                /* 0..65535; -1: null (init) */
    const char *payload;             /* the payload member as JSON text (any JSON
                                        value: "\"text\"", "{...}"); NULL: null.
                                        Curator writes a Map payload with an
                                        "@class" member, which is kept; without
                                        one Curator reads an object as a Map */
    int64_t registration_time_utc;   /* ms since the epoch; init: now */
    zkr_service_type_t service_type; /* init: ZKR_SERVICE_DYNAMIC */
    const zkr_uri_part_t *uri_parts; /* uriSpec's parts; NULL (init): uriSpec null */
    size_t uri_part_count;
    int enabled;                     /* 1 (init); 0 is written as "enabled":false
                                        (Curator 5 reads it; providers skip it) */
    char id_buf[40];                 /* room for the id init makes */
} zkr_instance_t;

/* Fill inst with the defaults above: a fresh random UUID as id (in
 * inst->id_buf), the registration time now, DYNAMIC, enabled, no name,
 * address, ports, payload or uriSpec (a macro passing the program's
 * struct size).  Returns ZKR_OK, ZKR_EINVAL (inst NULL), ZKR_ESYSTEM (no
 * randomness). */
ZKR_EXTERN int zkr_instance_init_size(zkr_instance_t *inst, size_t size);
#define zkr_instance_init(inst) zkr_instance_init_size((inst), sizeof(zkr_instance_t))

/* The JSON Curator's JsonInstanceSerializer writes for inst: *json
 * (*json_len bytes and a NUL byte) is the caller's (zkr_free).  Returns
 * ZKR_OK, ZKR_EINVAL (a NULL argument; inst->size not set by
 * zkr_instance_init; name or id not one path segment;
 * an address too long; a port out of range; payload not JSON; a string
 * not UTF-8; an unknown service type; uri_parts NULL with a count; the
 * JSON over ZKR_INSTANCE_JSON_MAX), ZKR_ENOMEM. */
ZKR_EXTERN int zkr_instance_to_json(const zkr_instance_t *inst, char **json, size_t *json_len);

/* The instance of Curator's JSON (len bytes; no NUL needed): *inst the
 * caller's (zkr_instance_free).  Returns ZKR_OK, ZKR_EINVAL (a NULL
 * argument), ZKR_EBADDATA (not JSON; not an object; name or id missing or
 * not a string; a member of the wrong type; a port out of 0..65535; an
 * unknown serviceType; over ZKR_INSTANCE_JSON_MAX bytes), ZKR_ENOMEM. */
ZKR_EXTERN int zkr_instance_from_json(const char *json, size_t len, zkr_instance_t **inst);

/* A copy of inst in one block: *copy the caller's (zkr_instance_free).
 * Returns ZKR_OK, ZKR_EINVAL (NULL argument, name or id NULL, uri_parts
 * NULL with a count), ZKR_ENOMEM. */
ZKR_EXTERN int zkr_instance_copy(const zkr_instance_t *inst, zkr_instance_t **copy);

/* Free an instance the library handed out.  NULL is a no-op. */
ZKR_EXTERN void zkr_instance_free(zkr_instance_t *inst);
/* Free an array of instances the library handed out (each, then the
 * array).  NULL is a no-op. */
ZKR_EXTERN void zkr_instances_free(zkr_instance_t **insts, size_t count);

/* "DYNAMIC", "STATIC", "PERMANENT", "DYNAMIC_SEQUENTIAL"; "UNKNOWN"
 * otherwise. */
ZKR_EXTERN const char *zkr_service_type_name(zkr_service_type_t type);

/* ---- registering and querying ---------------------------------------------- */

typedef struct zkr_discovery zkr_discovery_t;

/* A discovery on base_path (the services are its children).  Nothing is
 * sent.  Returns ZKR_OK, ZKR_EINVAL (out, c NULL; a path ZooKeeper would
 * refuse, "/" or under /zookeeper), ZKR_ECLOSED, ZKR_ENOMEM. */
ZKR_EXTERN int zkr_discovery_new(zkr_discovery_t **out, zkr_client_t *c, const char *base_path);

/* Register inst (copied) at <base>/<name>/<id> and keep it registered
 * (made again after a lost session) until unregistered or the discovery
 * is freed; waits until the server has it.  Returns ZKR_OK, ZKR_EINVAL
 * (d or inst NULL, or as zkr_instance_to_json), ZKR_EALREADY (this
 * discovery registered that name and id: zkr_discovery_update),
 * ZKR_ETIMEDOUT (not on the server in time, for instance while another
 * session's node has the path: it stays registered and is made once it
 * can be; zkr_discovery_unregister gives up), ZKR_ENOTFOUND (unregistered
 * by another thread meanwhile), ZKR_ECLOSED,
 * a refusal of the server (ZKR_ENOAUTH, ...: it is not kept registered),
 * ZKR_ENOMEM, ZKR_ESYSTEM. */
ZKR_EXTERN int zkr_discovery_register(zkr_discovery_t *d, const zkr_instance_t *inst, int64_t timeout_ms);

/* Write inst again (the registration of its name and id; its service type
 * is the one registered): kept for later re-creations.  Returns ZKR_OK,
 * ZKR_EINVAL (as zkr_discovery_register), ZKR_ENOTFOUND (not registered by
 * this discovery, or unregistered by another thread meanwhile),
 * ZKR_ETIMEDOUT (not confirmed in time: written once the link allows),
 * ZKR_ECLOSED, ZKR_ENOMEM. */
ZKR_EXTERN int zkr_discovery_update(zkr_discovery_t *d, const zkr_instance_t *inst, int64_t timeout_ms);

/* Unregister: delete the node this registration made (never another's),
 * waiting at most ZKR_RELEASE_WAIT_MS (else finished in the background).
 * Returns ZKR_OK, ZKR_EINVAL (NULL argument), ZKR_ENOTFOUND (not
 * registered by this discovery). */
ZKR_EXTERN int zkr_discovery_unregister(zkr_discovery_t *d, const char *name, const char *id);

/* The services: the names of the children of the base path, sorted
 * (bytewise); *names the caller's (zkr_strings_free; NULL when *count is
 * 0; no base path: 0 names).  Returns ZKR_OK, ZKR_EINVAL, ZKR_ETIMEDOUT,
 * ZKR_ECONNLOSS, ZKR_ESESSIONLOST, ZKR_ENOAUTH, ZKR_ECLOSED,
 * ZKR_ENOMEM. */
ZKR_EXTERN int zkr_discovery_names(zkr_discovery_t *d, char ***names, size_t *count, int64_t timeout_ms);

/* The instances of service `name`, in the order of their node names: each
 * node's data read and parsed (nodes gone meanwhile and unreadable data
 * left out, the latter logged); *insts the caller's (zkr_instances_free;
 * NULL when *count is 0).  Returns as zkr_discovery_names (ZKR_EINVAL
 * also for a name that is not one path segment). */
ZKR_EXTERN int zkr_discovery_instances(zkr_discovery_t *d, const char *name, zkr_instance_t ***insts,
                                       size_t *count, int64_t timeout_ms);

/* The instance at <base>/<name>/<id>: *inst the caller's
 * (zkr_instance_free; NULL on error).  Returns ZKR_OK, ZKR_EINVAL,
 * ZKR_ENONODE, ZKR_EBADDATA, and as zkr_discovery_names. */
ZKR_EXTERN int zkr_discovery_instance(zkr_discovery_t *d, const char *name, const char *id, zkr_instance_t **inst,
                                      int64_t timeout_ms);

/* Unregister every instance this discovery registered, whatever its type
 * (as Curator's close), then free it.  NULL is a no-op. */
ZKR_EXTERN void zkr_discovery_free(zkr_discovery_t *d);

/* ---- the service cache ------------------------------------------------------- */

/* The instances of one service kept by watches (a zkr_cache of
 * <base>/<name>'s children with their data; Curator's ServiceCache). */
typedef struct zkr_service_cache zkr_service_cache_t;

typedef enum zkr_service_event_type {
    ZKR_SERVICE_ADDED = 1,       /* instance: the new one */
    ZKR_SERVICE_UPDATED = 2,     /* instance: with its new data */
    ZKR_SERVICE_REMOVED = 3,     /* instance: as last known */
    ZKR_SERVICE_INITIALIZED = 4, /* the list equals the server's (first load,
                                    and after a lost session's reload) */
    ZKR_SERVICE_STATE = 5        /* the connection's state changed (state) */
} zkr_service_event_type_t;

typedef struct zkr_service_event {
    zkr_service_event_type_t type;
    const char *node_name;           /* ADDED, UPDATED, REMOVED: the node's name */
    const zkr_instance_t *instance;  /* ADDED, UPDATED, REMOVED: parsed; NULL if its
                                        data is unreadable (then logged) */
    zkr_state_t state;               /* STATE */
} zkr_service_event_t;

/* The service cache's listener, on the client's callback thread, in order,
 * its cache first; everything it is given is valid during the call.  It may
 * call the library (the cache's reads too), not zkr_service_cache_free on
 * its own cache. */
typedef void (*zkr_service_cache_fn)(zkr_service_cache_t *cache, const zkr_service_event_t *event, void *ctx);

/* A cache of the instances of service `name` of d's base path (d may be
 * freed before it).  Returns ZKR_OK, ZKR_EINVAL (a NULL argument; a name
 * not one path segment), ZKR_ECLOSED, ZKR_ENOMEM, ZKR_ESYSTEM. */
ZKR_EXTERN int zkr_service_cache_new(zkr_service_cache_t **out, zkr_discovery_t *d, const char *name);

/* The listener (NULL removes it), any time: told the events after the
 * call.  Returns ZKR_OK, ZKR_EINVAL (cache NULL). */
ZKR_EXTERN int zkr_service_cache_set_listener(zkr_service_cache_t *cache, zkr_service_cache_fn fn, void *ctx);
#ifdef ZKR__CHECKS
#define zkr_service_cache_set_listener(cache, fn, ctx)                                                         \
    ZKR__CHECKED(fn, zkr_service_cache_fn,                                                                    \
                 "a service cache listener is void fn(zkr_service_cache_t *cache, const zkr_service_event_t " \
                 "*event, void *ctx)",                                                                        \
                 zkr_service_cache_set_listener(cache, fn, ctx))
#endif

/* Start watching (once).  Returns ZKR_OK, ZKR_EINVAL, ZKR_ESTATE (started
 * before), ZKR_ECLOSED, ZKR_ESYSTEM. */
ZKR_EXTERN int zkr_service_cache_start(zkr_service_cache_t *cache);

/* Wait until the first load is done (as zkr_cache_wait_initialized).
 * Returns ZKR_OK, ZKR_EINVAL, ZKR_ESTATE (not started), ZKR_ETIMEDOUT,
 * ZKR_ECLOSED. */
ZKR_EXTERN int zkr_service_cache_wait_initialized(zkr_service_cache_t *cache, int64_t timeout_ms);

/* The cached instances, in the order of their node names, from one
 * consistent state (unreadable ones left out): *insts the caller's
 * (zkr_instances_free; NULL when *count is 0).  Returns ZKR_OK,
 * ZKR_EINVAL, ZKR_ENOMEM. */
ZKR_EXTERN int zkr_service_cache_instances(zkr_service_cache_t *cache, zkr_instance_t ***insts, size_t *count);

/* Stop and free: after it returns the listener is not running and will not
 * run again.  NULL is a no-op. */
ZKR_EXTERN void zkr_service_cache_free(zkr_service_cache_t *cache);

/* "ADDED", "UPDATED", "REMOVED", "INITIALIZED", "STATE"; "UNKNOWN"
 * otherwise. */
ZKR_EXTERN const char *zkr_service_event_name(zkr_service_event_type_t type);

/* ---- the provider --------------------------------------------------------------- */

/* How a provider picks among the enabled instances of its cache, in the
 * order of their node names (Curator's strategies). */
typedef enum zkr_provider_strategy {
    ZKR_PROVIDER_ROUND_ROBIN = 0, /* the next one each time (Curator's default) */
    ZKR_PROVIDER_RANDOM = 1,      /* any, uniformly */
    ZKR_PROVIDER_STICKY = 2       /* the same instance (same node) as long as it
                                     is there and enabled; then the next one
                                     round-robin (StickyStrategy around
                                     RoundRobinStrategy) */
} zkr_provider_strategy_t;

typedef struct zkr_service_provider zkr_service_provider_t;

/* A provider on cache (which must outlive it).  Returns ZKR_OK, ZKR_EINVAL
 * (a NULL argument, an unknown strategy), ZKR_ENOMEM, ZKR_ESYSTEM. */
ZKR_EXTERN int zkr_service_provider_new(zkr_service_provider_t **out, zkr_service_cache_t *cache,
                                        zkr_provider_strategy_t strategy);

/* Pick an instance: *inst a copy, the caller's (zkr_instance_free; NULL
 * on error).  Any thread.  Returns ZKR_OK, ZKR_EINVAL, ZKR_ENONODE (no
 * enabled instance in the cache), ZKR_ENOMEM. */
ZKR_EXTERN int zkr_service_provider_pick(zkr_service_provider_t *p, zkr_instance_t **inst);

/* NULL is a no-op. */
ZKR_EXTERN void zkr_service_provider_free(zkr_service_provider_t *p);

#ifdef __cplusplus
}
#endif
#endif

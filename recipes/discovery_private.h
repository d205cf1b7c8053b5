/* What the service discovery files (discovery_json.c, discovery.c,
 * discovery_cache.c) share: never installed. */
#ifndef ZKR_RECIPES_DISCOVERY_PRIVATE_H
#define ZKR_RECIPES_DISCOVERY_PRIVATE_H

#include <pthread.h>

#include "zkr/discovery.h"

typedef struct zkr__disc_reg zkr__disc_reg_t;

struct zkr_discovery {
    zkr_client_t *c; /* retained */
    char *base;
    pthread_mutex_t mu;    /* guards regs and their users, gone */
    pthread_cond_t cond;   /* a registration's users leave */
    zkr__disc_reg_t *regs; /* what it registered (discovery_register.c) */
};

/* Unregister everything d registered (zkr_discovery_free). */
void zkr__disc_unregister_all(zkr_discovery_t *d);

/* 1 if s is one path segment a service name or an instance id may be: not
 * empty, not "." or "..", no '/', only characters ZooKeeper accepts, at
 * most 255 bytes.  0 otherwise (NULL too). */
int zkr__disc_segment_valid(const char *s);

/* "<base>/<name>" or "<base>/<name>/<id>" (id NULL: the former),
 * malloc'd; NULL on ENOMEM. */
char *zkr__disc_path(const char *base, const char *name, const char *id);

/* Parse the data of an instance node (data may be NULL with len 0:
 * ZKR_EBADDATA), as zkr_instance_from_json. */
int zkr__disc_parse(const char *data, size_t len, zkr_instance_t **inst);

#endif
